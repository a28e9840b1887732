"""Experiment configuration: load a YAML file, validate it, get typed attrs classes.

import coeval
try:
    config = coeval.load_config("experiment.yaml")   # checked against the installed plugins
except coeval.ConfigError as err:
    for issue in err.issues:      # every problem at once: rule, YAML path, line, fix
        print(issue.format())

The rules are imported on first use of one of their names. The loader
(:mod:`coeval.config.loader`) checks a config against the registries it is handed: the
plugin layer builds on this package, so ``coeval.load_config``
(:mod:`coeval.plugins.config_loading`) is the one that hands it the installed plugins'.
"""

from __future__ import annotations

import importlib
from typing import Any

from coeval.config.errors import ConfigError, ValidationIssue
from coeval.config.model import Config, ExperimentConfig, ModelConfig, SamplingConfig, TaskConfig

#: name -> the module that defines it, imported on first use
_LAZY = {
    "structure_config": "coeval.config.loader",
    "judged_factors": "coeval.config.validate",
    "resolve_run_reference": "coeval.config.validate",
    "run_folder_path": "coeval.config.validate",
}


#: names that moved above the plugin layer: where to find them now
_MOVED = {"load_config": "coeval.load_config", "validate_config": "coeval.validate_config"}


def __getattr__(name: str) -> Any:
    if name in _MOVED:  # they need the installed plugins, which build on this package
        raise AttributeError(f"module 'coeval.config' has no attribute '{name}': use {_MOVED[name]} "
                             "(it reads the config against the installed plugins)")
    if name not in _LAZY:
        raise AttributeError(f"module 'coeval.config' has no attribute '{name}'")
    return getattr(importlib.import_module(_LAZY[name]), name)


__all__ = [
    "Config",
    "ConfigError",
    "ExperimentConfig",
    "ModelConfig",
    "SamplingConfig",
    "TaskConfig",
    "ValidationIssue",
    "judged_factors",
    "resolve_run_reference",
    "run_folder_path",
    "structure_config",
]
