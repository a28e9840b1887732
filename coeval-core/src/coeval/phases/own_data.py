"""Phase 3 for tasks with their own data (``tasks[].data``): the rows become datapoints.

No teacher is called: the task's first ``sampling.total`` items (all rows, or ``--limit``'s
share, chosen as ``coeval ingest --limit`` chooses them) are written under the teacher
``{task}-data``, with the records ``coeval ingest --file`` writes. The phase's modes apply
as to a teacher: New refuses when the task already has datapoints, Keep and Model keep
them, Extend writes the missing ones (a larger ``--limit`` on ``--continue``).
"""

from __future__ import annotations

from coeval.config.model import TaskConfig
from coeval.config.task_data import data_backend, data_folder, data_teacher
from coeval.phases._items import mode_refusal
from coeval.phases.base import PhaseContext, PhaseError, PhaseRefusedError, RunView, Survey
from coeval.phases.ids import DATA_GENERATION
from coeval.storage.records import load_file_records, record_status, utc_now

__all__ = ["data_tasks", "survey_task_data", "write_task_data"]


def data_tasks(view: RunView) -> list[TaskConfig]:
    return [t for t in view.config.tasks if t.data is not None]


def survey_task_data(view: RunView, survey: Survey) -> None:
    """Expected and present datapoints of the data tasks (no file read but the run's)."""
    for task in data_tasks(view):
        teacher = data_teacher(task.name)
        counts = survey.group(teacher)
        counts.expected += task.sampling.total
        for rec in load_file_records(view.run.datapoints_path(task.name, teacher)).values():
            if record_status(rec) == "ok":
                counts.ok += 1


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
        try:
            records = data_backend().task_datapoints(task.name, task.data.spec(), data_folder(ctx.config.source),
                                                     task.sampling.total, utc_now())
        except ValueError as exc:
            raise PhaseError(f"task {task.name}: {exc}") from None
        written = 0
        for record in records:
            if record_status(existing.get(record["id"], {"status": "missing"})) == "ok":
                continue
            ctx.writers.write(path, record)
            written += 1
        if ctx.result is not None:
            ctx.result.written += written
        ctx.log.info("task data written", task=task.name, teacher=teacher, written=written,
                     kept=len(records) - written)
