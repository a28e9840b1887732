"""``config.yaml`` in the run folder: the config a run used, with every secret removed.

Written at the start of each run (``--continue`` rewrites it, since the config may have
changed, a raised quota say). ``coeval status`` and ``coeval repair`` read it back to know
what a run is expected to contain
(:func:`coeval.plugins.config_loading.read_config_snapshot`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import yaml

from coeval.config.credentials import redact
from coeval.config.model import Config
from coeval.config.secret_settings import scrub_settings
from coeval.storage.run_folder import RunFolder, atomic_write_text

__all__ = ["SECRET_PARAMETER_KEYS", "config_to_mapping", "write_config_snapshot"]

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
