"""A task's own data file (``tasks[].data``) changed since the run last read it: which rows
changed, and what ``--continue`` does about them.

The file's hash in ``meta.json``'s settings says whether it changed; its rows then say how
(:mod:`coeval.phases.data_rows`). Edited and removed rows are drift, named by row (``row 3``,
or ``id t3`` with an id column) and the start of their prompt. Added rows are an addition,
as a larger ``sampling.total`` is, and reordered rows are no change. Once let through, the
removed rows' datapoints are listed in ``meta.json`` (``data_rows_left_out``) so the run,
``coeval status`` and ``coeval analyze`` leave them out, and phase 3 is run again to write
the edited and added rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from coeval.config.model import Config, TaskConfig
from coeval.phase_ids import DATA_GENERATION
from coeval.phases.base import RunView
from coeval.phases.data_rows import LEFT_OUT_KEY, RowNote, RowPlan
from coeval.phases.own_data import row_plan
from coeval.plugins.manager import registries
from coeval.run.drift import Change
from coeval.storage.run_folder import RunFolder, utc_now

__all__ = ["apply_row_plans", "data_row_plans", "row_changes"]

_SHOWN = 5


def _recorded_sha(meta: Mapping[str, Any], task: str) -> Any:
    settings = meta.get("settings")
    tasks = settings.get("tasks") if isinstance(settings, Mapping) else None
    entry = tasks.get(task) if isinstance(tasks, Mapping) else None
    definition = entry.get("definition") if isinstance(entry, Mapping) else None
    data = definition.get("data") if isinstance(definition, Mapping) else None
    return data.get("sha256") if isinstance(data, Mapping) else None


def _changed(meta: Mapping[str, Any], config: Config) -> list[TaskConfig]:
    """The data tasks whose file is not the one the run recorded (none for a run from before
    settings were recorded: it is not checked)."""
    out = []
    for task in config.tasks:
        if task.data is None or task.data.sha256 is None:
            continue
        recorded = _recorded_sha(meta, task.name)
        if isinstance(recorded, str) and recorded != task.data.sha256:
            out.append(task)
    return out


def data_row_plans(run: RunFolder, meta: Mapping[str, Any], config: Config) -> list[RowPlan]:
    """One plan per data task whose file changed since the run recorded it (reads the file)."""
    changed = _changed(meta, config)
    if not changed:
        return []
    view, now = RunView(config, run, registries()), utc_now()
    return [row_plan(view, task, now) for task in changed]


def _rows(notes: Sequence[RowNote]) -> str:
    shown = ", ".join(n.text() for n in notes[:_SHOWN])
    return shown + (f", ... ({len(notes)} in all)" if len(notes) > _SHOWN else "")


def _count(n: int) -> str:
    return f"{n} row" if n == 1 else f"{n} rows"


def row_changes(plans: Sequence[RowPlan]) -> list[Change]:
    """The drift of each plan: its edited rows and its removed rows (added rows are none)."""
    changes = []
    for plan in plans:
        if plan.edited:
            changes.append(Change(
                "task", plan.task, "data.rows_edited", tuple(n.text() for n in plan.edited), "redone",
                note=f"data: {_count(len(plan.edited))} edited: {_rows(plan.edited)} (made again: the new datapoint, "
                     "its answers and judgments replace the old ones)"))
        if plan.removed:
            changes.append(Change(
                "task", plan.task, "data.rows_removed", tuple(n.text() for n in plan.removed), "left out",
                note=f"data: {_count(len(plan.removed))} removed: {_rows(plan.removed)} (the records stay on disk, "
                     "left out of the run, status and analysis)"))
    return changes


def apply_row_plans(run: RunFolder, plans: Sequence[RowPlan]) -> None:
    """Record what the plans leave out, and have phase 3 run again where they write rows."""
    if not plans:
        return

    def change(meta: dict[str, Any]) -> None:
        listed = meta.get(LEFT_OUT_KEY)
        listed = dict(listed) if isinstance(listed, Mapping) else {}
        for plan in plans:
            listed[plan.task] = sorted(plan.left_out)
            if not plan.left_out:
                del listed[plan.task]
        if listed:
            meta[LEFT_OUT_KEY] = listed
        else:
            meta.pop(LEFT_OUT_KEY, None)
        completed = meta.get("phases_completed")
        if any(plan.write for plan in plans) and isinstance(completed, list):
            meta["phases_completed"] = [p for p in completed if p != DATA_GENERATION]

    run.update_meta(change)
