"""An experiment config read against the installed plugins: ``load_config`` and
``validate_config`` as users and the CLI call them, and a run folder's ``config.yaml``
(``read_config_snapshot``).

The config package sits below every plugin layer, so its loader
(:mod:`coeval.config.loader`) checks a config against the registries it is handed and routes
``interface: auto`` through the resolver it is handed. This module hands it the installed
plugins': the plugin manager's registries and its ``resolve_auto_interface`` hook.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import yaml

from coeval.config import loader
from coeval.config._yaml import load_yaml_guarded
from coeval.config.errors import ConfigError, ValidationIssue
from coeval.config.loader import structure_config
from coeval.config.model import Config, ModelConfig
from coeval.plugins.manager import Registries, get_plugin_manager
from coeval.plugins.manager import registries as installed
from coeval.storage.run_folder import RunFolder
from coeval.storage.safe_files import check_run_file, read_run_file

__all__ = ["load_config", "read_config_snapshot", "validate_config"]


def _auto_resolver() -> loader.AutoResolver | None:
    """The routing plugins' ``resolve_auto_interface``, or None when none is installed."""
    hook = get_plugin_manager().hook.resolve_auto_interface
    if not hook.get_hookimpls():
        return None

    def resolve(model: ModelConfig, has_credentials: Any) -> str | None:
        chosen = hook(model=model, has_credentials=has_credentials)
        return str(chosen) if chosen else None

    return resolve


def load_config(
    path_or_mapping: loader.ConfigSource,
    *,
    continue_run: bool = False,
    check_filesystem: bool = True,
    keys_file: str | os.PathLike[str] | None = None,
    resume_from: str | None = None,
    allow_existing_run: bool = False,
    environment_as_warnings: bool = False,
    registries: Registries | None = None,
) -> Config:
    """Load, validate and structure an experiment config (``path_or_mapping``: a YAML file or
    a parsed mapping) against the installed plugins, or ``registries``. The options are
    :func:`coeval.config.loader.load_config`'s. Raises :class:`ConfigError` listing every
    problem; warnings end up in ``config.warnings``."""
    return loader.load_config(
        path_or_mapping, continue_run=continue_run, check_filesystem=check_filesystem, keys_file=keys_file,
        resume_from=resume_from, allow_existing_run=allow_existing_run,
        environment_as_warnings=environment_as_warnings, registries=registries or installed(),
        resolve_auto=_auto_resolver(),
    )


def validate_config(
    path_or_mapping: loader.ConfigSource,
    *,
    continue_run: bool = False,
    check_filesystem: bool = True,
    keys_file: str | os.PathLike[str] | None = None,
    resume_from: str | None = None,
    allow_existing_run: bool = False,
    environment_as_warnings: bool = False,
    registries: Registries | None = None,
) -> list[ValidationIssue]:
    """Every problem of a config (errors and warnings), without raising: an empty list means
    it loads cleanly. The same arguments as :func:`load_config`."""
    return loader.validate_config(
        path_or_mapping, continue_run=continue_run, check_filesystem=check_filesystem, keys_file=keys_file,
        resume_from=resume_from, allow_existing_run=allow_existing_run,
        environment_as_warnings=environment_as_warnings, registries=registries or installed(),
        resolve_auto=_auto_resolver(),
    )


def read_config_snapshot(run: RunFolder) -> Config | None:
    """The config stored in a run folder, or None when there is none (or it cannot be read).
    A FIFO, device or outside link in its place is :class:`UnsafeRunFile`, not None."""
    check_run_file(run.config_path, run.root)
    if not run.config_path.is_file():
        return None
    try:
        raw = load_yaml_guarded(read_run_file(run.config_path, run.root).decode("utf-8"), str(run.config_path))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    if not isinstance(raw, Mapping):
        return None
    try:
        return load_config(dict(raw), check_filesystem=False)
    except ConfigError:
        pass
    try:  # a legacy-format snapshot, or of a config an older version accepted
        return structure_config(dict(raw), source=str(run.config_path))
    except Exception:
        return None
