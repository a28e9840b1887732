"""How many calls each built-in phase makes, from the config alone (the seed's formula).

Each standard phase's ``plan()`` is one call into this module, so the counting rules sit
together and read like the documentation:

* phase 1: one call per LLM teacher for each attribute kind a task leaves to the teachers
  (``target_attributes: auto | complete`` and ``nuanced_attributes: auto``);
* phase 2: one call per LLM teacher for each task whose rubric is ``auto`` or ``extend``;
* phase 3: ``sampling.total`` calls per (task, LLM teacher); benchmark teachers replay
  ingested items and make none, but their items are answered and judged like any other;
* phase 4: every student answers every phase-3 item;
* phase 5: every judge scores every phase-4 response: one call per response in ``single``
  mode, one per judged factor in ``per_factor`` mode. Label attributes and metric factors
  are scored without a judge; a task whose factors are all such makes no judge call.

A phase in mode Keep on a run forked with ``resume_from`` reuses that run's work and makes
no call; Extend and Model only fill what is missing, so their count is an upper bound.
Nothing here reads a record or calls a model.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from coeval.config.model import ModelConfig, TaskConfig
from coeval.evaluators.calls import calls_per_response
from coeval.phase_ids import (
    ATTRIBUTE_MAPPING,
    DATA_GENERATION,
    EVALUATION,
    RESPONSE_COLLECTION,
    RUBRIC_MAPPING,
)
from coeval.phases.base import PlannedCalls, RunView

__all__ = [
    "PlannedCalls",
    "attribute_calls",
    "phase3_items",
    "plan_attribute_mapping",
    "plan_basis",
    "plan_data_generation",
    "plan_evaluation",
    "plan_response_collection",
    "plan_rubric_mapping",
]


def plan_basis(view: RunView, phase: str) -> str:
    """How a phase's count is meant under its mode: reused from ``resume_from`` (Keep on a
    forked run), an upper bound (Extend/Model skip existing records) or the full count."""
    mode = view.config.experiment.phases.mode(phase)
    if mode == "Keep" and view.config.experiment.resume_from:
        return "reused"
    if mode in ("Extend", "Model"):
        return "upper_bound"
    return "full"


def attribute_calls(task: TaskConfig) -> int:
    """Phase-1 calls per teacher: one per attribute kind the teachers must propose."""
    target = isinstance(task.target_attributes, str)  # auto | complete
    nuanced = task.nuanced_attributes == "auto"
    return int(target) + int(nuanced)


def _llm_teachers(view: RunView) -> list[ModelConfig]:
    return view.callable_models("teacher")


def _virtual_teachers(view: RunView) -> list[ModelConfig]:
    return [m for m in view.config.teachers if view.is_virtual(m)]


def phase3_items(view: RunView, task: TaskConfig) -> int:
    """Datapoints phase 3 yields for a task: ``sampling.total`` per teacher, benchmark
    teachers included (they replay ingested items); a task's own data: its rows, once."""
    if task.data is not None:
        return task.sampling.total
    return task.sampling.total * (len(_llm_teachers(view)) + len(_virtual_teachers(view)))


class _Cells:
    """``(task, model) -> calls`` of one phase; nothing is charged when it is reused."""

    def __init__(self, phase: str, basis: str) -> None:
        self.phase, self.basis = phase, basis
        self.cells: dict[tuple[str, str], int] = {}
        self.notes: list[str] = []

    def charge(self, task: TaskConfig, models: Iterable[ModelConfig], per_model: int) -> None:
        if self.basis == "reused" or per_model <= 0:
            return
        for m in models:
            key = (task.name, m.name)
            self.cells[key] = self.cells.get(key, 0) + per_model

    def planned(self) -> PlannedCalls:
        return PlannedCalls.from_cells(self.phase, self.cells, basis=self.basis, notes=self.notes)


def _start(view: RunView, phase: str) -> _Cells:
    return _Cells(phase, plan_basis(view, phase))


def plan_attribute_mapping(view: RunView, phase: str = ATTRIBUTE_MAPPING) -> PlannedCalls:
    out = _start(view, phase)
    teachers = _llm_teachers(view)
    for task in view.config.tasks:
        out.charge(task, teachers, attribute_calls(task))
    return out.planned()


def plan_rubric_mapping(view: RunView, phase: str = RUBRIC_MAPPING) -> PlannedCalls:
    out = _start(view, phase)
    teachers = _llm_teachers(view)
    for task in view.config.tasks:
        if isinstance(task.rubric, str):  # auto | extend
            out.charge(task, teachers, 1)
        if task.rubric == "auto" and teachers and out.basis != "reused":  # also a rubric left out: say so
            n = len(teachers)
            who = f"each of its {n} teachers proposes" if n > 1 else "its teacher proposes"
            out.notes.append(
                f"task {task.name}: rubric auto (what a task without `rubric:` gets): {who} the factors in "
                f"phase 2 ({n} call{'s' if n > 1 else ''}); give `rubric: {{factor: criterion}}` to skip them"
            )
    return out.planned()


def plan_data_generation(view: RunView, phase: str = DATA_GENERATION) -> PlannedCalls:
    out = _start(view, phase)
    teachers = _llm_teachers(view)
    for task in view.config.tasks:
        if task.target_attributes == "complete":
            out.notes.append(
                f"task {task.name}: target_attributes complete covers the full cross-product of the values "
                "phase 1 finds; phase 3 makes at least sampling.total calls per teacher, more if that is larger"
            )
        if task.data is None:  # a task's own data is read, not written by teachers
            out.charge(task, teachers, task.sampling.total)
    virtual = _virtual_teachers(view)
    if virtual:
        names = ", ".join(m.name for m in virtual)
        out.notes.append(
            f"benchmark teacher {names} replays ingested items and makes no call; its items are counted at "
            "sampling.total per task (an upper bound: it only supplies the tasks it ingested)"
        )
    return out.planned()


def plan_response_collection(view: RunView, phase: str = RESPONSE_COLLECTION) -> PlannedCalls:
    out = _start(view, phase)
    students = view.config.students
    for task in view.config.tasks:
        out.charge(task, students, phase3_items(view, task) * task.samples)
    return out.planned()


def _calls_per_response(view: RunView, task: TaskConfig, notes: list[str]) -> Counter[str]:
    """Model -> phase-5 calls one response of ``task`` costs: each registered evaluator's
    scorers that name a model (the LLM judge, and any a rubric factor is routed to)."""
    rubric = task.static_rubric
    if rubric is None:  # written in phase 2: only the judge scores it, on factors not known yet
        if task.evaluation_mode == "per_factor":
            notes.append(
                f"task {task.name}: rubric {task.rubric} is written in phase 2, so its number of factors is "
                "unknown; phase 5 is counted as one judge call per response (multiply by the factor count)"
            )
        return Counter({judge.name: 1 for judge in view.config.judges})
    evaluators = [entry.value for entry in view.registries.evaluators]
    return calls_per_response(evaluators, task, rubric, view.config.judges)


def plan_evaluation(view: RunView, phase: str = EVALUATION) -> PlannedCalls:
    out = _start(view, phase)
    students = view.config.students
    by_name = {m.name: m for m in view.config.models}
    for task in view.config.tasks:
        # judges score every student's responses, whichever process wrote them
        responses = phase3_items(view, task) * task.samples * len(students)
        for model, calls in _calls_per_response(view, task, out.notes).items():
            out.charge(task, [by_name[model]], responses * calls)
    return out.planned()
