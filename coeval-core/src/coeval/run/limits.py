"""``--limit N``: a small slice of an experiment for quick iteration.

The limit caps each task's ``sampling.total`` (datapoints per (task, teacher)), so the
answers and judgments that follow cover only those items. Datapoints are written in a
fixed order, so a later ``--continue`` with a larger N (or none) extends the same run:
the first items are kept, only the missing ones are made.

A run made under a limit that cut a task records it in ``meta.json``::

    "limit": {"datapoints_per_task_teacher": 2, "full_totals": {"short_answer": 5}}

since its ``phases_completed`` and its ``config.yaml`` then describe the slice, not the
experiment. ``coeval status`` reads the full totals from there (the run is ``partial``,
not ``completed``) and ``coeval plan --continue`` counts the records, not the phases
completed. The entry goes once a run without a cutting limit completes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from coeval.config.model import Config
from coeval.phase_ids import DATA_GENERATION
from coeval.phases.run_selection import LIMIT_KEY
from coeval.record_schema import TASK_ID, TEACHER_MODEL_ID
from coeval.storage.records import load_phase_records
from coeval.storage.run_folder import RunFolder

__all__ = [
    "LIMIT_KEY",
    "cuts_datapoints",
    "full_config",
    "limit_datapoints",
    "limit_note",
    "record_limit",
]

def limit_datapoints(config: Config, limit: int) -> Config:
    """``config`` with every task's ``sampling.total`` at most ``limit``."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    tasks = tuple(
        attrs.evolve(task, sampling=attrs.evolve(task.sampling, total=min(task.sampling.total, limit)))
        for task in config.tasks
    )
    return attrs.evolve(config, tasks=tasks, datapoint_limit=limit)


def cuts_datapoints(run_root: Path, limit: int) -> bool:
    """Whether some (task, teacher) of the run has more datapoints than ``limit``."""
    per_group: Counter[tuple[Any, Any]] = Counter(
        (dp.get(TASK_ID), dp.get(TEACHER_MODEL_ID)) for dp in load_phase_records(RunFolder(run_root), DATA_GENERATION).values()
    )
    return any(n > limit for n in per_group.values())


def record_limit(run_root: Path, config: Config, limit: int | None, status: str) -> dict[str, Any] | None:
    """After a run of ``config`` (the full one, before ``--limit``): keep or clear the
    ``limit`` entry of ``meta.json``. Returns the entry in force afterwards."""
    run = RunFolder(run_root)
    if not run.meta_path.is_file():
        return None
    full = {task.name: task.sampling.total for task in config.tasks}
    cut = limit is not None and (any(total > limit for total in full.values()) or cuts_datapoints(run_root, limit))
    if not cut and status != "completed":
        return run.read_meta().get(LIMIT_KEY)  # an unfinished run: the slice may still show

    def change(meta: dict[str, Any]) -> None:
        if cut:
            before = meta.get(LIMIT_KEY) or {}
            totals = {**(before.get("full_totals") or {}), **full}
            meta[LIMIT_KEY] = {"datapoints_per_task_teacher": limit, "full_totals": totals}
        else:
            meta.pop(LIMIT_KEY, None)

    entry: dict[str, Any] | None = run.update_meta(change).get(LIMIT_KEY)
    return entry


def limit_note(entry: Mapping[str, Any] | None) -> str:
    """``"limited to 2 datapoints per (task, teacher)"``, or ``""`` when the run is not."""
    if not entry:
        return ""
    return f"limited to {entry.get('datapoints_per_task_teacher')} datapoints per (task, teacher)"


def full_config(config: Config, meta: Mapping[str, Any]) -> Config:
    """The run's config snapshot with each task's full ``sampling.total`` restored."""
    totals = (meta.get(LIMIT_KEY) or {}).get("full_totals") or {}
    if not totals:
        return config
    tasks = tuple(
        attrs.evolve(task, sampling=attrs.evolve(task.sampling, total=max(task.sampling.total, int(totals[task.name]))))
        if isinstance(totals.get(task.name), int) else task
        for task in config.tasks
    )
    return attrs.evolve(config, tasks=tasks)
