"""Experiment configuration: load a YAML file, validate it, get typed attrs classes.

from coeval.config import load_config, ConfigError
try:
    config = load_config("experiment.yaml")
except ConfigError as err:
    for issue in err.issues:      # every problem at once: rule, YAML path, line, fix
        print(issue.format())

The loader is imported on first use of one of its names: it asks the plugin layer for the
installed registries, and that layer itself builds on ``coeval.config.model``, so importing
the model must not import the loader. Code inside coeval imports from
``coeval.config.loader`` directly.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from coeval.config.errors import ConfigError, ValidationIssue
from coeval.config.model import Config, ExperimentConfig, ModelConfig, SamplingConfig, TaskConfig
from coeval.config.validate import judged_factors, resolve_run_reference, run_folder_path

if TYPE_CHECKING:
    from coeval.config.loader import load_config, structure_config, validate_config

_LOADER_NAMES = frozenset({"load_config", "structure_config", "validate_config"})


def __getattr__(name: str) -> Any:
    if name not in _LOADER_NAMES:
        raise AttributeError(f"module 'coeval.config' has no attribute '{name}'")
    return getattr(importlib.import_module("coeval.config.loader"), name)


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
