"""Settings drift: a resumed run must not mix two configurations under one name.

``meta.json`` keeps, under ``settings``, every model's effective parameters per role and
every task's definition, each with a short hash. ``coeval run --continue`` compares the
config with them: a change to a setting that shapes records already written (a model's
temperature, a task's rubric) stops the run with exit code 2 naming the model or task,
the setting, and the old and new values. ``--allow-drift`` proceeds and appends the
changes to ``meta.json`` under ``drift``. A larger ``sampling.total`` only extends a run,
so it is not drift. A task's own data file is compared row by row, not by its hash
(:mod:`coeval.run.data_drift`). Runs written before settings were recorded are not checked.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import attrs

from coeval.config.credentials import redact
from coeval.config.model import Config, TaskConfig
from coeval.config.secret_settings import scrub_settings
from coeval.storage.run_folder import RunFolder, utc_now
from coeval.storage.snapshot import SECRET_PARAMETER_KEYS

__all__ = ["DATA_FACTS", "Change", "describe", "find_drift", "record_allowed_drift", "record_settings", "settings_of"]

_MISSING = "(not set)"
#: a data file's facts: a changed file is compared row by row (:mod:`coeval.run.data_drift`)
DATA_FACTS = ("data.sha256", "data.rows")


@attrs.frozen
class Change:
    """One setting that differs between the run's recorded settings and the config."""

    kind: str  # "model" or "task"
    name: str
    setting: str  # e.g. "judge.temperature", "rubric"
    old: Any
    new: Any
    #: the line a user reads, where "was ..., now ..." says it badly (rows of a data file)
    note: str = ""


def _plain(value: Any) -> Any:
    """JSON-ready, sorted, and with anything that looks like a key redacted (meta.json is
    shared with run reports and must hold no secret). Credential headers and URL passwords
    are masked before (``***#`` and a hash): a changed one is drift, shown by its hash."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return redact(value)
    return value


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _model_settings(config: Config) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for model in config.models:
        roles = {}
        for role in sorted(model.roles):
            params = {k: v for k, v in model.params_for(role).items() if k.lower() not in SECRET_PARAMETER_KEYS}
            roles[role] = {"interface": model.interface, **_plain(scrub_settings(params))}
        out[model.name] = {"roles": roles, "hash": _digest(roles)}
    return out


def _task_settings(config: Config) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for task in config.tasks:
        definition = _plain(attrs.asdict(task, recurse=True))
        definition["sampling"].pop("total", None)  # a larger total extends the run
        out[task.name] = {"definition": definition, "hash": _digest(definition)}
    return out


def settings_of(config: Config) -> dict[str, Any]:
    """What ``meta.json`` keeps under ``settings`` for ``config``."""
    return {"models": _model_settings(config), "tasks": _task_settings(config)}


def _diff(kind: str, name: str, old: Mapping[str, Any], new: Mapping[str, Any], prefix: str = "") -> list[Change]:
    changes = []
    for key in sorted(set(old) | set(new)):
        before, after = old.get(key, _MISSING), new.get(key, _MISSING)
        if before == after:
            continue
        if isinstance(before, Mapping) and isinstance(after, Mapping):
            changes.extend(_diff(kind, name, before, after, f"{prefix}{key}."))
        else:
            changes.append(Change(kind, name, f"{prefix}{key}", before, after))
    return changes


def find_drift(recorded: Mapping[str, Any] | None, config: Config) -> list[Change]:
    """Settings of models and tasks present in both that differ; none for a legacy run."""
    if not recorded:
        return []
    current = settings_of(config)
    changes: list[Change] = []
    for kind, body in (("model", "roles"), ("task", "definition")):
        before_all = recorded.get(f"{kind}s") or {}
        for name, now in current[f"{kind}s"].items():
            before = before_all.get(name)
            if not isinstance(before, Mapping) or before.get("hash") == now["hash"]:
                continue  # a new model or task is an addition, not drift
            if kind == "model":  # a role the run never used is an addition too
                old_roles = before.get(body) or {}
                changes.extend(
                    _diff(kind, name, {r: old_roles[r] for r in old_roles if r in now[body]},
                          {r: now[body][r] for r in old_roles if r in now[body]})
                )
            else:
                old = before.get(body) or {}
                changes.extend(c for c in _diff(kind, name, old, _without_new_defaults(old, now[body]))
                               if c.setting not in DATA_FACTS)
    return changes


def _without_new_defaults(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Any]:
    """``current`` without the task settings a run recorded before they existed, where they
    keep their default (``samples: 1``, no ``data``): a new setting left alone is no drift."""
    defaults = _plain(attrs.asdict(TaskConfig(name="", description=""), recurse=True))
    return {k: v for k, v in current.items() if k in recorded or k not in defaults or v != defaults[k]}


def describe(change: Change) -> str:
    """One line a user can act on."""
    if change.note:
        return f"{change.kind} {change.name}: {change.note}"
    return f"{change.kind} {change.name}: {change.setting} was {change.old!r}, now {change.new!r}"


def record_settings(run: RunFolder, config: Config) -> None:
    """Store the settings of ``config`` in ``meta.json`` (after any drift was checked)."""
    settings = settings_of(config)

    def change(meta: dict[str, Any]) -> None:
        before = meta.get("settings") or {}
        for kind in ("models", "tasks"):  # a run with --models/--tasks keeps the others' settings
            kept = {k: v for k, v in (before.get(kind) or {}).items() if k not in settings[kind]}
            settings[kind] = {**kept, **settings[kind]}
        meta["settings"] = settings

    run.update_meta(change)


def record_allowed_drift(run: RunFolder, changes: list[Change]) -> None:
    """Append the changes ``--allow-drift`` let through to ``meta.json`` under ``drift``."""
    entry = {
        "at": utc_now(),
        "changes": [
            {"kind": c.kind, "name": c.name, "setting": c.setting, "old": c.old, "new": c.new} for c in changes
        ],
    }

    def change(meta: dict[str, Any]) -> None:
        meta.setdefault("drift", []).append(entry)

    run.update_meta(change)
