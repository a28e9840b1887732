"""How many model calls an experiment makes, before it makes any.

The count follows the seed formula, phase by phase and task by task:

* phase 1: one call per LLM teacher for each attribute kind a task leaves to the teachers
  (``target_attributes: auto | complete`` and ``nuanced_attributes: auto``);
* phase 2: one call per LLM teacher for each task whose rubric is ``auto`` or ``extend``;
* phase 3: ``sampling.total`` calls per (task, LLM teacher); benchmark teachers replay
  ingested items and make none, but their items are answered and judged like any other;
* phase 4: every student answers every phase-3 item;
* phase 5: every judge scores every phase-4 response: one call per response in ``single``
  mode, one per judged factor in ``per_factor`` mode. Label attributes and metric factors
  are scored without a judge; a task whose factors are all such makes no judge call.

A phase in mode Keep that forks an earlier run (``resume_from``) reuses that run's
artifacts and makes no call. Extend and Model phases only fill what is missing, so for
them the count is an upper bound (``coeval plan --continue`` counts what is really left).
The plan never reads the disk and never calls a model.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from coeval.config.model import PHASE_IDS, Config, ModelConfig, TaskConfig
from coeval.config.validate import judged_factors, run_folder_path
from coeval.interfaces.known import BATCHABLE_INTERFACES

__all__ = [
    "PHASE_SHORT",
    "PHASE_TITLES",
    "ModelPlan",
    "PhasePlan",
    "Plan",
    "TaskPlan",
    "batch_phases",
    "format_plan",
    "plan_experiment",
    "print_plan",
]

PHASE_TITLES = {
    "attribute_mapping": "1 attribute mapping",
    "rubric_mapping": "2 rubric mapping",
    "data_generation": "3 data generation",
    "response_collection": "4 response collection",
    "evaluation": "5 evaluation",
}
PHASE_SHORT = {
    "attribute_mapping": "1 attributes",
    "rubric_mapping": "2 rubric",
    "data_generation": "3 datapoints",
    "response_collection": "4 responses",
    "evaluation": "5 evaluations",
}
VIRTUAL_TEACHER_INTERFACES = frozenset({"benchmark"})
_BATCH_PHASES = ("data_generation", "response_collection", "evaluation")


def _zero() -> dict[str, int]:
    return dict.fromkeys(PHASE_IDS, 0)


@attrs.frozen
class ModelPlan:
    name: str
    interface: str
    requested_interface: str | None
    roles: tuple[str, ...]
    calls: Mapping[str, int]  # phase -> calls
    batch: tuple[str, ...] = ()  # phases sent through the provider's batch API
    max_calls: int | None = None  # experiment.quota

    @property
    def total(self) -> int:
        return sum(self.calls.values())

    @property
    def interface_label(self) -> str:
        if self.requested_interface and self.requested_interface != self.interface:
            return f"{self.requested_interface} -> {self.interface}"
        return self.interface


@attrs.frozen
class TaskPlan:
    name: str
    target: str  # "1-2" or "all"
    nuance: str
    total: int
    evaluation_mode: str
    factors: tuple[str, ...] | None  # factors judges score; None when phase 2 writes the rubric
    judge_free_factors: tuple[str, ...]
    items: int  # phase-3 items (all teachers)
    calls: Mapping[str, int]

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())


@attrs.frozen
class PhasePlan:
    phase: str
    mode: str
    calls: int
    #: "reused": Keep on a forked run, nothing to do; "upper_bound": Extend/Model, existing
    #: records are skipped; "full": every item is called.
    basis: str = "full"


@attrs.frozen
class Plan:
    experiment_id: str
    run_folder: str
    models: tuple[ModelPlan, ...]
    tasks: tuple[TaskPlan, ...]
    phases: tuple[PhasePlan, ...]
    notes: tuple[str, ...] = ()
    only_models: tuple[str, ...] = ()
    #: (task, phase, model) -> calls: the finest grain, which the cost estimate prices.
    cells: Mapping[tuple[str, str, str], int] = attrs.field(factory=dict)

    @property
    def total_calls(self) -> int:
        return sum(p.calls for p in self.phases)

    def calls(self, phase: str) -> int:
        for p in self.phases:
            if p.phase == phase:
                return p.calls
        raise KeyError(phase)

    @property
    def calls_by_phase(self) -> dict[str, int]:
        return {p.phase: p.calls for p in self.phases}

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (``coeval plan --json`` builds on it)."""
        return {
            "experiment_id": self.experiment_id,
            "run_folder": self.run_folder,
            "total_calls": self.total_calls,
            "phases": {p.phase: {"mode": p.mode, "calls": p.calls, "basis": p.basis} for p in self.phases},
            "tasks": {
                t.name: {
                    "items": t.items,
                    "evaluation_mode": t.evaluation_mode,
                    "judged_factors": list(t.factors) if t.factors is not None else None,
                    "calls": dict(t.calls),
                }
                for t in self.tasks
            },
            "models": {
                m.name: {
                    "interface": m.interface,
                    "requested_interface": m.requested_interface,
                    "roles": list(m.roles),
                    "batch_phases": list(m.batch),
                    "max_calls": m.max_calls,
                    "calls": dict(m.calls),
                    "total_calls": m.total,
                }
                for m in self.models
            },
            "notes": list(self.notes),
        }


def batch_phases(config: Config, model: ModelConfig) -> tuple[str, ...]:
    """Phases whose calls for ``model`` go through its provider's batch API.

    ``batch_enabled: false`` on the model turns batch off; ``true`` turns it on for phases
    3-5; unset follows ``experiment.batch[interface]``.
    """
    if model.interface not in BATCHABLE_INTERFACES or model.batch_enabled is False:
        return ()
    if model.batch_enabled is True:
        return _BATCH_PHASES
    settings = config.experiment.batch.get(model.interface, {})
    return tuple(p for p in _BATCH_PHASES if settings.get(p))


def _is_virtual(model: ModelConfig) -> bool:
    """Teachers that replay stored items instead of calling a model (``benchmark``, or an
    interface registered with ``virtual=True``)."""
    if model.interface in VIRTUAL_TEACHER_INTERFACES:
        return True
    from coeval.plugins import registries

    interfaces = registries().interfaces
    if model.interface in interfaces:
        options = interfaces.entry(model.interface).options
        return bool(options.get("virtual") or options.get("virtual_teacher"))
    return False


def _range_label(value: Any) -> str:
    if value == "all":
        return "all"
    low, high = value
    return str(low) if low == high else f"{low}-{high}"


def _attribute_calls(task: TaskConfig) -> int:
    """Phase-1 calls per teacher: one per attribute kind the teachers must propose."""
    target = isinstance(task.target_attributes, str)  # auto | complete
    nuanced = task.nuanced_attributes == "auto"
    return int(target) + int(nuanced)


def _phase_bases(config: Config, forked: bool) -> dict[str, str]:
    """How each phase's count is meant: reused from ``resume_from``, an upper bound
    (Extend/Model skip existing records) or the full count."""
    basis: dict[str, str] = {}
    for phase in PHASE_IDS:
        mode = config.experiment.phases.mode(phase)
        if mode == "Keep" and forked:
            basis[phase] = "reused"
        elif mode in ("Extend", "Model"):
            basis[phase] = "upper_bound"
        else:
            basis[phase] = "full"
    return basis


def _model_plans(config: Config, model_calls: dict[str, dict[str, int]], notes: list[str]) -> list[ModelPlan]:
    """One plan per model, noting the models whose quota caps the planned calls."""
    model_plans: list[ModelPlan] = []
    for m in config.models:
        quota = config.experiment.quota.get(m.name)
        max_calls = quota.max_calls if quota is not None else None
        plan = ModelPlan(
            name=m.name,
            interface=m.interface,
            requested_interface=m.requested_interface,
            roles=tuple(m.roles),
            calls=model_calls[m.name],
            batch=batch_phases(config, m),
            max_calls=max_calls,
        )
        if max_calls is not None and plan.total > max_calls:
            notes.append(
                f"quota: {m.name} is capped at {max_calls:,} calls but the plan needs {plan.total:,}; "
                "the rest are left as gaps (raise max_calls and --continue to fill them)"
            )
        model_plans.append(plan)
    return model_plans


def plan_experiment(config: Config, *, only_models: Sequence[str] = ()) -> Plan:
    """Count the calls of every phase, task and model. Makes no call, reads no file.

    ``only_models`` restricts the count to what a ``--only-models`` process does: the listed
    teachers in phases 1-3, students in phase 4, judges in phase 5.
    """
    exp = config.experiment
    selected = set(only_models)

    def active(model: ModelConfig) -> bool:
        return not selected or model.name in selected

    teachers = config.teachers
    llm_teachers = [m for m in teachers if not _is_virtual(m)]
    virtual_teachers = [m for m in teachers if _is_virtual(m)]
    students = config.students
    judges = config.judges
    forked = bool(exp.resume_from)

    basis = _phase_bases(config, forked)

    model_calls: dict[str, dict[str, int]] = {m.name: _zero() for m in config.models}
    cells: dict[tuple[str, str, str], int] = {}
    task_plans: list[TaskPlan] = []
    notes: list[str] = []

    def charge(phase: str, models: Iterable[ModelConfig], per_model: int, calls: dict[str, int]) -> None:
        if basis[phase] == "reused" or per_model <= 0:
            return
        for m in models:
            if active(m):
                model_calls[m.name][phase] += per_model
                calls[phase] += per_model
                key = (task.name, phase, m.name)
                cells[key] = cells.get(key, 0) + per_model

    for task in config.tasks:
        calls = _zero()
        charge("attribute_mapping", llm_teachers, _attribute_calls(task), calls)
        if isinstance(task.rubric, str):  # auto | extend
            charge("rubric_mapping", llm_teachers, 1, calls)
        total = task.sampling.total
        if task.target_attributes == "complete":
            notes.append(
                f"task {task.name}: target_attributes complete covers the full cross-product of the values "
                "phase 1 finds; phase 3 makes at least sampling.total calls per teacher, more if that is larger"
            )
        charge("data_generation", llm_teachers, total, calls)
        items = total * (len(llm_teachers) + len(virtual_teachers))
        charge("response_collection", students, items, calls)

        factors = judged_factors(task)
        per_response = 1
        if factors is None:
            if task.evaluation_mode == "per_factor":
                notes.append(
                    f"task {task.name}: rubric {task.rubric} is written in phase 2, so its number of factors is "
                    "unknown; phase 5 is counted as one judge call per response (multiply by the factor count)"
                )
        elif not factors:
            per_response = 0
        elif task.evaluation_mode == "per_factor":
            per_response = len(factors)
        # judges score every student's responses, whichever process wrote them
        responses = items * len(students)
        charge("evaluation", judges, responses * per_response, calls)

        free = tuple(
            name for name in (task.static_rubric or {}) if factors is not None and name not in factors
        ) + tuple(task.label_attributes)
        task_plans.append(
            TaskPlan(
                name=task.name,
                target=_range_label(task.sampling.target),
                nuance=_range_label(task.sampling.nuance),
                total=total,
                evaluation_mode=task.evaluation_mode,
                factors=tuple(factors) if factors is not None else None,
                judge_free_factors=tuple(dict.fromkeys(free)),
                items=items,
                calls=calls,
            )
        )

    if virtual_teachers:
        names = ", ".join(m.name for m in virtual_teachers)
        notes.append(
            f"benchmark teacher {names} replays ingested items and makes no call; its items are counted at "
            "sampling.total per task (an upper bound: it only supplies the tasks it ingested)"
        )
    model_plans = _model_plans(config, model_calls, notes)
    phase_plans = tuple(
        PhasePlan(
            phase=p,
            mode=exp.phases.mode(p),
            calls=sum(t.calls[p] for t in task_plans),
            basis=basis[p],
        )
        for p in PHASE_IDS
    )
    if any(p.basis == "upper_bound" for p in phase_plans):
        notes.append("Extend and Model phases skip records that already exist: their counts are upper bounds")
    return Plan(
        experiment_id=exp.id,
        run_folder=str(run_folder_path({"storage_folder": exp.storage_folder, "id": exp.id})),
        models=tuple(model_plans),
        tasks=tuple(task_plans),
        phases=phase_plans,
        notes=tuple(notes),
        only_models=tuple(only_models),
        cells=cells,
    )


# ---- rendering -------------------------------------------------------------------------------


def _count(plan_phase: PhasePlan) -> str:
    if plan_phase.basis == "reused":
        return "0 (reused)"
    prefix = "<= " if plan_phase.basis == "upper_bound" and plan_phase.calls else ""
    return f"{prefix}{plan_phase.calls:,}"


def print_plan(plan: Plan, console: Any = None) -> None:
    """Print the plan as rich tables (to ``console``, or standard output)."""
    from rich import box
    from rich.table import Table

    from coeval.console import output_console

    console = console or output_console()
    style: dict[str, Any] = {"title_justify": "left", "box": box.SIMPLE_HEAD}
    console.print(f"[bold]Experiment[/bold] {plan.experiment_id}  ->  {plan.run_folder}")
    if plan.only_models:
        console.print(f"only models: {', '.join(plan.only_models)}")

    models = Table(title="Models", **style)
    for col in ("model", "interface", "roles", "batch phases", "quota", "calls"):
        models.add_column(col, justify="right" if col in ("quota", "calls") else "left")
    for m in plan.models:
        batch = ", ".join(PHASE_TITLES[p].split()[0] for p in m.batch) or "-"
        quota = f"{m.max_calls:,}" if m.max_calls is not None else "-"
        models.add_row(m.name, m.interface_label, ", ".join(m.roles), batch, quota, f"{m.total:,}")
    console.print(models)

    tasks = Table(title="Tasks", **style)
    for col in ("task", "target", "nuance", "total", "mode", "judged factors", "items"):
        tasks.add_column(col, justify="right" if col in ("total", "items") else "left")
    for t in plan.tasks:
        if t.factors is None:
            factors = "set in phase 2"
        else:
            factors = str(len(t.factors))
            if t.judge_free_factors:
                factors += f" (+{len(t.judge_free_factors)} judge-free)"
        tasks.add_row(t.name, t.target, t.nuance, str(t.total), t.evaluation_mode, factors, f"{t.items:,}")
    console.print(tasks)

    phases = Table(title="Calls per phase", **style)
    phases.add_column("task")
    for p in plan.phases:
        phases.add_column(f"{PHASE_SHORT[p.phase]}\n{p.mode}", justify="right")
    phases.add_column("total", justify="right")
    for t in plan.tasks:
        phases.add_row(t.name, *[f"{t.calls[p.phase]:,}" for p in plan.phases], f"{t.total_calls:,}")
    phases.add_row("all tasks", *[_count(p) for p in plan.phases], f"{plan.total_calls:,}", style="bold")
    console.print(phases)
    for note in plan.notes:
        console.print(f"note: {note}", highlight=False)


def format_plan(plan: Plan, width: int = 110) -> str:
    """The plan as plain text tables (what ``coeval run --dry-run`` prints)."""
    from rich.console import Console

    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None, force_terminal=False, highlight=False)
    print_plan(plan, console)
    return buffer.getvalue()
