"""``config.yaml`` in the run folder: the config a run used, with every secret removed.

Written at the start of each run (``--continue`` rewrites it, since the config may have
changed, a raised quota say). ``coeval status`` and ``coeval repair`` read it back to know
what a run is expected to contain.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import yaml

from coeval.config._yaml import load_yaml_guarded
from coeval.config.credentials import redact
from coeval.config.errors import ConfigError
from coeval.config.loader import load_config, structure_config
from coeval.config.model import Config
from coeval.config.secret_settings import scrub_settings
from coeval.storage.run_folder import RunFolder, atomic_write_text
from coeval.storage.safe_files import check_run_file, read_run_file

__all__ = ["SECRET_PARAMETER_KEYS", "config_to_mapping", "read_config_snapshot", "write_config_snapshot"]

#: Parameter names that hold credentials (some interfaces accept them inline).
SECRET_PARAMETER_KEYS = frozenset(
    {"api_key", "access_key", "access_key_id", "secret_access_key", "session_token", "token", "password", "secret"}
)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def config_to_mapping(config: Config) -> dict[str, Any]:
    """The config as plain YAML data (loadable again), without secrets: key parameters
    dropped, credential headers and URL passwords masked (:mod:`coeval.config.secret_settings`)."""
    models = []
    for m in config.models:
        d = attrs.asdict(m, recurse=True)
        d.pop("access_key", None)
        d["parameters"] = {k: v for k, v in d["parameters"].items() if k.lower() not in SECRET_PARAMETER_KEYS}
        d["role_parameters"] = {
            role: {k: v for k, v in params.items() if k.lower() not in SECRET_PARAMETER_KEYS}
            for role, params in d["role_parameters"].items()
        }
        if not d["role_parameters"]:
            d.pop("role_parameters")
        models.append(scrub_settings(_plain(d)))
    tasks = [_plain(attrs.asdict(t, recurse=True)) for t in config.tasks]
    for t in tasks:
        if not t.get("prompt_library"):
            t.pop("prompt_library", None)
        if not t.get("label_attributes"):
            t.pop("label_attributes", None)
    experiment = _plain(attrs.asdict(config.experiment, recurse=True))
    # plugin phases' modes sit beside the built-in ones, as the config file writes them
    experiment["phases"] = config.experiment.phases.as_dict()
    return {"models": models, "tasks": tasks, "experiment": experiment}


def _keep_previous_snapshot(run: RunFolder, text: str) -> None:
    """A changed config never silently replaces ``config.yaml``: the previous one is kept
    as ``config.N.yaml`` (N = 1, 2, ... in order of replacement)."""
    path = run.config_path
    try:
        previous = path.read_text(encoding="utf-8")
    except OSError:
        return
    if previous == text:
        return
    n = 1
    while (kept := path.with_name(f"config.{n}.yaml")).exists():
        n += 1
    atomic_write_text(kept, previous)


def write_config_snapshot(run: RunFolder, config: Config) -> None:
    text = redact(yaml.safe_dump(config_to_mapping(config), sort_keys=False, allow_unicode=True))
    _keep_previous_snapshot(run, text)
    atomic_write_text(run.config_path, text)


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
