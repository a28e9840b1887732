"""Phase 3 for tasks with their own data (``tasks[].data``): the rows become datapoints.

No teacher is called: the task's first ``sampling.total`` items (all rows, or ``--limit``'s
share, chosen as ``coeval ingest --limit`` chooses them) are written under the teacher
``{task}-data``, with the records ``coeval ingest --file`` writes. The phase's modes apply
as to a teacher: New refuses when the task already has datapoints, Keep and Model keep
them, Extend writes the missing ones (a larger ``--limit`` on ``--continue``), the rows
added to the file, and the edited ones again (:mod:`coeval.phases.data_rows`). Datapoints
whose rows left the file (``meta.json``'s list, :func:`left_out_rows`) are left out of the
run and of ``coeval status``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from coeval.config.data_readers import TaskDataReaderMissing, data_reader, readers_of
from coeval.config.model import TaskConfig
from coeval.config.task_data import data_folder, data_teacher
from coeval.phase_ids import DATA_GENERATION
from coeval.phases._items import mode_refusal
from coeval.phases.base import PhaseContext, PhaseError, PhaseRefusedError, RunView, Survey
from coeval.phases.data_rows import RowPlan, left_out_ids, plan_rows
from coeval.record_schema import ID
from coeval.storage.records import load_file_records, record_status, utc_now
from coeval.storage.run_folder import RunFolder

__all__ = ["data_tasks", "left_out_rows", "row_plan", "survey_task_data", "write_task_data"]


def data_tasks(view: RunView) -> list[TaskConfig]:
    return [t for t in view.config.tasks if t.data is not None]


def left_out_rows(run: RunFolder) -> frozenset[str]:
    """Ids of the datapoints whose rows left their data file (let through with
    ``--allow-drift``): on disk, left out of the run, of status and of analysis."""
    try:
        return left_out_ids(run.read_meta())
    except (OSError, json.JSONDecodeError):
        return frozenset()  # an unreadable meta.json is reported where it is read for itself


def survey_task_data(view: RunView, survey: Survey) -> None:
    """Expected and present datapoints of the data tasks (no file read but the run's)."""
    left_out = left_out_rows(view.run)
    for task in data_tasks(view):
        teacher = data_teacher(task.name)
        counts = survey.group(teacher)
        counts.expected += task.sampling.total
        for dp_id, rec in load_file_records(view.run.datapoints_path(task.name, teacher)).items():
            if record_status(rec) == "ok" and dp_id not in left_out:
                counts.ok += 1


def row_plan(view: RunView, task: TaskConfig, now: str, held: Mapping[str, Any] | None = None) -> RowPlan:
    """What the task's data file asks of the datapoints the run holds (``held``, read from
    the run when not given); reads the file."""
    assert task.data is not None
    spec = task.data.spec()
    try:
        rows = data_reader(spec, readers_of(view.registries.task_data_readers)).task_rows(task.name, spec, data_folder(view.config.source), now)
    except (TaskDataReaderMissing, ValueError) as exc:
        raise PhaseError(f"task {task.name}: {exc}") from None
    if held is None:
        held = load_file_records(view.run.datapoints_path(task.name, data_teacher(task.name)))
    return plan_rows(task.name, rows, held, by_id=task.data.id is not None, limit=task.sampling.total)


def write_task_data(ctx: PhaseContext) -> None:
    """Write the data tasks' missing datapoints (under the phase's mode)."""
    for task in data_tasks(ctx):
        assert task.data is not None
        teacher = data_teacher(task.name)
        path = ctx.run.datapoints_path(task.name, teacher)
        existing = load_file_records(path)
        if existing and ctx.mode in ("Model", "Keep"):
            continue
        if existing and ctx.mode == "New":
            raise PhaseRefusedError(mode_refusal(DATA_GENERATION, f"{task.name} x {teacher} ({path.name})"))
        plan = row_plan(ctx, task, utc_now(), existing)
        for record in plan.write:
            ctx.writers.write(path, record, replaces=record[ID] in plan.replaces)
        if ctx.result is not None:
            ctx.result.written += len(plan.write)
        ctx.log.info("task data written", task=task.name, teacher=teacher, added=len(plan.added),
                     edited=len(plan.edited))
