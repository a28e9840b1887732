"""Experiment configuration: load a YAML file, validate it, get typed attrs classes.

from coeval.config import load_config, ConfigError
try:
    config = load_config("experiment.yaml")
except ConfigError as err:
    for issue in err.issues:      # every problem at once: rule, YAML path, line, fix
        print(issue.format())
"""

from coeval.config.errors import ConfigError, ValidationIssue
from coeval.config.loader import load_config, structure_config, validate_config
from coeval.config.model import Config, ExperimentConfig, ModelConfig, SamplingConfig, TaskConfig
from coeval.config.validate import judged_factors, resolve_run_reference, run_folder_path

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
