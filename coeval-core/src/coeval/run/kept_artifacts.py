"""What a resumed run really uses for its maps and rubrics: the artifacts it keeps.

``--continue`` keeps phase 1-2 artifacts (an edited static rubric or attribute map in the
config is not applied), so the config snapshot and the recorded settings describe the kept
artifacts, and ``--allow-drift`` records only changes that are applied.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from coeval.config.model import Config, TaskConfig
from coeval.run.drift import Change
from coeval.storage.run_folder import RunFolder

__all__ = ["as_the_run_did", "not_applied"]

#: task setting -> the artifact a resumed run keeps instead
_KEPT = ("rubric", "target_attributes", "nuanced_attributes")


def _artifact(run: RunFolder, task: str, kind: str) -> Any:
    path = {"rubric": run.rubric_path, "target_attributes": run.target_attrs_path,
            "nuanced_attributes": run.nuanced_attrs_path}[kind](task)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def not_applied(run: RunFolder, change: Change) -> bool:
    """A static map or rubric edited in the config while the run keeps its artifact."""
    if change.kind != "task":
        return False
    kind = change.setting.split(".", 1)[0]
    return kind in _KEPT and isinstance(_artifact(run, change.name, kind), dict)


def _kept_task(run: RunFolder, task: TaskConfig) -> TaskConfig:
    changes: dict[str, Any] = {}
    for kind in _KEPT:
        value = getattr(task, kind)
        kept = _artifact(run, task.name, kind)
        if isinstance(value, str) or not isinstance(kept, dict):
            continue  # auto / complete / extend: the artifact is the run's own, as configured
        if kind == "rubric":
            if dict(value) != kept:
                changes[kind] = kept
        else:
            as_tuples = {k: tuple(v) for k, v in kept.items() if isinstance(v, list)}
            if {k: tuple(v) for k, v in value.items()} != as_tuples:
                changes[kind] = as_tuples
    return attrs.evolve(task, **changes) if changes else task


def as_the_run_did(config: Config, run: RunFolder) -> Config:
    """``config`` with each static map or rubric replaced by the artifact the run keeps."""
    tasks = tuple(_kept_task(run, t) for t in config.tasks)
    return attrs.evolve(config, tasks=tasks) if tasks != config.tasks else config
