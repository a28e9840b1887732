"""Experiment configuration: load a YAML file, validate it, get typed attrs classes.

from coeval.config import load_config, ConfigError
try:
    config = load_config("experiment.yaml")
except ConfigError as err:
    for issue in err.issues:      # every problem at once: rule, YAML path, line, fix
        print(issue.format())

The loader and the rules are imported on first use of one of their names: the loader asks
the plugin layer for the installed registries, and that layer (the contract's types) builds
on ``coeval.config.model``, so importing the model must import neither. Code inside coeval
imports from ``coeval.config.loader`` and ``coeval.config.validate`` directly.
"""

from __future__ import annotations

import importlib
from typing import Any

from coeval.config.errors import ConfigError, ValidationIssue
from coeval.config.model import Config, ExperimentConfig, ModelConfig, SamplingConfig, TaskConfig

#: name -> the module that defines it, imported on first use
_LAZY = {
    "load_config": "coeval.config.loader",
    "structure_config": "coeval.config.loader",
    "validate_config": "coeval.config.loader",
    "judged_factors": "coeval.config.validate",
    "resolve_run_reference": "coeval.config.validate",
    "run_folder_path": "coeval.config.validate",
}


def __getattr__(name: str) -> Any:
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
    "load_config",
    "resolve_run_reference",
    "run_folder_path",
    "structure_config",
    "validate_config",
]
