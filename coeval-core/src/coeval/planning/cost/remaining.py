"""The calls a run will make from the state of its folder: what ``plan --continue`` and
the spend check before ``run --continue`` (or a fork's first run) charge.

Phases 3-5 are asked for exactly the items they would submit in the mode the run gives
them (:meth:`owed`, the code their ``run`` uses), in run order. Work that depends on items
not written yet is projected: a datapoint still to make will be answered by every student
in scope, and an answer still to make scored by every scorer that calls a model, so adding
a student, a judge or a larger ``sampling.total`` is charged before it is spent. A run
forked with ``resume_from`` is surveyed on what it will copy (hard links in a scratch
folder, removed on return). Phases 1-2 and plugin phases count their plan minus the calls
already made.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coeval.config.model import Config
from coeval.config.phase_order import ordered_phases
from coeval.config.validate import resolve_run_reference
from coeval.phase_ids import DATA_GENERATION, EVALUATION, MAPPING_PHASES, RECORD_PHASES, RESPONSE_COLLECTION
from coeval.phases.base import PhaseRefusedError, RunView
from coeval.phases.info import configured_mode, planned_calls
from coeval.phases.run_selection import completed_phases, run_mode
from coeval.phases.survey_memo import survey_of
from coeval.planning.cost.history import done_calls
from coeval.planning.ingested import merge_ingested
from coeval.record_schema import STUDENT_MODEL_ID, TASK_ID, TEACHER_MODEL_ID
from coeval.storage.run_folder import PHASE_DIRS, RunFolder

if TYPE_CHECKING:
    from coeval.plugins.manager import Registries

__all__ = ["Cells", "forked_source", "remaining_cells", "surveyed_folder"]

#: (task, phase, model) -> calls
Cells = dict[tuple[str, str, str], int]

_MAPPING = MAPPING_PHASES
_RECORD_PHASES = RECORD_PHASES


def forked_source(config: Config, run: RunFolder, resume_from: str | None = None) -> RunFolder | None:
    """The run a first start of ``config`` forks (``resume_from``), or None: no fork, the
    fork already happened, or the source is missing (the run reports that itself)."""
    ref = resume_from or config.experiment.resume_from
    if not ref or run.meta_path.is_file():
        return None
    folder = resolve_run_reference(config.experiment.storage_folder, ref)
    if not folder.is_dir() or folder.resolve() == run.root.resolve():
        return None
    return RunFolder(folder)


def _link_or_copy(src: Path, dest: Path) -> None:
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)


@contextlib.contextmanager
def surveyed_folder(config: Config, run: RunFolder, registries: Registries, resume_from: str | None = None
                    ) -> Iterator[RunFolder]:
    """The folder to survey: the run itself, or for a fork not started yet a scratch folder
    holding what the fork will copy (every phase not in mode New), removed on exit."""
    source = forked_source(config, run, resume_from)
    if source is None:
        yield run
        return
    with tempfile.TemporaryDirectory(prefix="coeval-estimate-") as scratch:
        dest = RunFolder(Path(scratch) / run.root.name)
        for phase in ordered_phases(registries):
            if phase.name not in PHASE_DIRS or configured_mode(config, phase) == "New":
                continue
            src_dir = source.root / PHASE_DIRS[phase.name]
            if not src_dir.is_dir():
                continue
            dest_dir = dest.root / PHASE_DIRS[phase.name]
            dest_dir.mkdir(parents=True, exist_ok=True)
            for src in sorted(src_dir.iterdir()):
                if src.is_file() and not src.is_symlink() and not src.name.startswith("."):
                    _link_or_copy(src, dest_dir / src.name)
        yield dest


def remaining_cells(
    config: Config,
    run: RunFolder,
    registries: Registries,
    *,
    continue_run: bool,
    only_models: Sequence[str] = (),
) -> tuple[Config, Cells]:
    """The run's config (grown by ingested tasks on ``--continue``) and the calls it will
    make, per (task, phase, model)."""
    meta = run.read_meta() if run.meta_path.is_file() else {}
    if continue_run:
        config = merge_ingested(config, meta)
    only = set(only_models)

    def in_scope(name: str) -> bool:
        return not only or name in only

    view = RunView(config, run, registries)
    completed = completed_phases(meta) if continue_run else set()
    done = done_calls(run, config, skip_phases=(*_RECORD_PHASES, *completed))  # phases 1-2 only
    cells: Cells = {}
    new_datapoints: Counter[tuple[str, str]] = Counter()  # (task, teacher) -> datapoints to make
    new_responses: Counter[tuple[str, str, str]] = Counter()  # (task, teacher, student) -> answers to make
    upstream_owes = False
    for phase in ordered_phases(registries):
        name = phase.name
        mode = run_mode(config, phase, continue_run=continue_run)
        if name in completed and not upstream_owes and survey_of(phase, view).complete:
            continue
        before = sum(cells.values())
        try:
            if name == DATA_GENERATION:
                _data_generation(phase, view, mode, in_scope, cells, new_datapoints)
            elif name == RESPONSE_COLLECTION:
                _responses(phase, view, mode, in_scope, cells, new_datapoints, new_responses)
            elif name == EVALUATION:
                _evaluations(phase, view, mode, in_scope, cells, new_responses)
            else:
                _planned(phase, view, name, in_scope, done, cells)
        except PhaseRefusedError:
            continue  # the run refuses this phase (New over records): it makes no call
        upstream_owes = upstream_owes or sum(cells.values()) > before
    return config, cells


def _add(cells: Cells, key: tuple[str, str, str], n: int = 1) -> None:
    if n:
        cells[key] = cells.get(key, 0) + n


def _planned(phase: Any, view: RunView, name: str, in_scope: Callable[[str], bool], done: Counter[Any],
             cells: Cells) -> None:
    planned = planned_calls(phase, view)
    for (task, model), n in planned.cell_map().items():
        if name in _MAPPING or in_scope(model):
            _add(cells, (task, name, model), max(0, n - done.get((task, name, model), 0)))


def _data_generation(phase: Any, view: RunView, mode: str, in_scope: Callable[[str], bool], cells: Cells,
                     new_datapoints: Counter[tuple[str, str]]) -> None:
    unplanned: dict[tuple[str, str], int] = {}
    for slot in phase.owed(view, mode, in_scope, unplanned=unplanned):
        _add(cells, (slot.task.name, phase.name, slot.teacher.name))
        new_datapoints[(slot.task.name, slot.teacher.name)] += 1
    for (task, teacher), n in unplanned.items():
        _add(cells, (task, phase.name, teacher), n)
        new_datapoints[(task, teacher)] += n


def _responses(phase: Any, view: RunView, mode: str, in_scope: Callable[[str], bool], cells: Cells,
               new_datapoints: Counter[tuple[str, str]], new_responses: Counter[tuple[str, str, str]]) -> None:
    asks = phase.owed(view, mode, in_scope)
    for ask in asks:
        teacher = str(ask.datapoint.get(TEACHER_MODEL_ID))
        _add(cells, (ask.task.name, phase.name, ask.student.name))
        new_responses[(ask.task.name, teacher, ask.student.name)] += 1
    if not new_datapoints:
        return
    existing = {(r.get(TASK_ID), r.get(TEACHER_MODEL_ID), r.get(STUDENT_MODEL_ID))
                for r in view.run.iter_records(phase.name)}
    if mode == "Keep" and existing:
        return
    for (task, teacher), n in new_datapoints.items():
        for student in view.callable_models("student"):
            if not in_scope(student.name) or (mode == "Model" and (task, teacher, student.name) in existing):
                continue
            _add(cells, (task, phase.name, student.name), n)
            new_responses[(task, teacher, student.name)] += n


def _evaluations(phase: Any, view: RunView, mode: str, in_scope: Callable[[str], bool], cells: Cells,
                 new_responses: Counter[tuple[str, str, str]]) -> None:
    for scoring in phase.owed(view, mode, in_scope):
        if scoring.scorer.model is not None:
            _add(cells, (scoring.task.name, phase.name, scoring.scorer.model.name))
    if not new_responses:
        return
    groups = phase.groups_with_records(view)
    if mode == "Keep" and groups:
        return
    tasks = {t.name: t for t in view.config.tasks}
    per_task = {name: phase.calls_per_response(view, task, in_scope) for name, task in tasks.items()}
    for (task, teacher, student), n in new_responses.items():
        for (scorer, model), calls in per_task.get(task, Counter()).items():
            if mode == "Model" and (task, teacher, scorer, student) in groups:
                continue
            _add(cells, (task, phase.name, model), n * calls)
