"""How many model calls an experiment makes, before it makes any.

Every registered phase counts its own calls (:meth:`coeval.phases.base.Phase.plan`; the
five standard phases follow the seed formula, see :mod:`coeval.phases.plans`), in run
order; this module adds them up per phase, task and model, applies ``--only-models``
and notes quotas the plan exceeds. A phase in mode Keep that forks an earlier run
(``resume_from``) reuses that run's artifacts and makes no call. Extend and Model phases
only fill what is missing, so for them the count is an upper bound (``coeval plan
--continue`` counts what is really left). The plan never reads a record and never calls a
model.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
from rich import box
from rich.console import Console
from rich.table import Table

from coeval.config.model import Config, ModelConfig, TaskConfig
from coeval.config.phase_order import ordered_phases
from coeval.config.validate import judged_factors, run_folder_path
from coeval.console import output_console
from coeval.phase_ids import RECORD_PHASES, SHORT_TITLES, TITLES
from coeval.phases.base import PlannedCalls, RunView
from coeval.phases.info import configured_mode, phase_short, phase_title, planned_calls
from coeval.phases.plans import phase3_items
from coeval.plugins.manager import registries as installed
from coeval.storage.run_folder import RunFolder

if TYPE_CHECKING:
    from coeval.plugins.manager import Registries

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

#: Titles and short labels of the five standard phases (each phase carries its own; a
#: :class:`Plan` knows those of every phase it counts).
PHASE_TITLES = TITLES
PHASE_SHORT = SHORT_TITLES
_BATCH_PHASES = RECORD_PHASES


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
    #: how tables name the phase ("5 evaluation", "5 evaluations"); the id when empty
    title: str = ""
    short: str = ""

    @property
    def label(self) -> str:
        return self.title or PHASE_TITLES.get(self.phase, self.phase)

    @property
    def short_label(self) -> str:
        return self.short or PHASE_SHORT.get(self.phase, self.label)


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

    def title(self, phase: str) -> str:
        """The phase's title ("5 evaluation"); its id for a phase the plan does not count."""
        return next((p.label for p in self.phases if p.phase == phase), PHASE_TITLES.get(phase, phase))

    def short(self, phase: str) -> str:
        return next((p.short_label for p in self.phases if p.phase == phase), PHASE_SHORT.get(phase, phase))

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
    3-5; unset follows ``experiment.batch[interface]``. Validation let these settings
    through only for interfaces with a registered batch runner (V-13, V-26).
    """
    if model.batch_enabled is False:
        return ()
    if model.batch_enabled is True:
        return _BATCH_PHASES
    settings = config.experiment.batch.get(model.interface, {})
    return tuple(p for p in _BATCH_PHASES if settings.get(p))


def _range_label(value: Any) -> str:
    if value == "all":
        return "all"
    low, high = value
    return str(low) if low == high else f"{low}-{high}"


def _model_plans(
    config: Config, model_calls: Mapping[str, Mapping[str, int]], notes: list[str]
) -> list[ModelPlan]:
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


def _task_plan(view: RunView, task: TaskConfig, calls: Mapping[str, int]) -> TaskPlan:
    """What a task is (sampling, judged factors, phase-3 items) beside its calls per phase."""
    factors = judged_factors(task)
    free = tuple(
        name for name in (task.static_rubric or {}) if factors is not None and name not in factors
    ) + tuple(task.label_attributes)
    return TaskPlan(
        name=task.name,
        target=_range_label(task.sampling.target),
        nuance=_range_label(task.sampling.nuance),
        total=task.sampling.total,
        evaluation_mode=task.evaluation_mode,
        factors=tuple(factors) if factors is not None else None,
        judge_free_factors=tuple(dict.fromkeys(free)),
        items=phase3_items(view, task),
        calls=calls,
    )


def _restricted(planned: PlannedCalls, selected: set[str]) -> PlannedCalls:
    """Only the calls of ``--only-models`` models (all when none is named)."""
    if not selected:
        return planned
    cells = {k: n for k, n in planned.cells.items() if k[1] in selected}
    if planned.cells:
        return PlannedCalls.from_cells(planned.phase, cells, basis=planned.basis, notes=planned.notes)
    by_model = {m: n for m, n in planned.calls_by_model.items() if m in selected}
    return attrs.evolve(planned, calls_by_model=by_model)


def _resolve(registries: Registries | None) -> Registries:
    if registries is not None:
        return registries
    return installed()


def plan_experiment(
    config: Config, *, only_models: Sequence[str] = (), registries: Registries | None = None
) -> Plan:
    """Count the calls of every registered phase, task and model. Makes no call, reads no
    record.

    ``only_models`` restricts the count to what a ``--only-models`` process does: the listed
    teachers in phases 1-3, students in phase 4, judges in phase 5. ``registries`` name the
    phases and interfaces (those of the installed plugins when None).
    """
    exp = config.experiment
    regs = _resolve(registries)
    view = RunView(config, RunFolder.for_experiment(exp.storage_folder, exp.id), regs)
    phases = ordered_phases(regs)
    selected = set(only_models)
    planned = [_restricted(planned_calls(p, view), selected) for p in phases]
    ids = [p.phase for p in planned]
    model_calls = {m.name: dict.fromkeys(ids, 0) for m in config.models}
    task_calls = {t.name: dict.fromkeys(ids, 0) for t in config.tasks}
    cells: dict[tuple[str, str, str], int] = {}
    notes: list[str] = []
    for pc in planned:
        for model, n in pc.calls_by_model.items():
            if model in model_calls:
                model_calls[model][pc.phase] += n
        for task, n in pc.calls_by_task.items():
            if task in task_calls:
                task_calls[task][pc.phase] += n
        for (task, model), n in pc.cell_map().items():
            cells[(task, pc.phase, model)] = cells.get((task, pc.phase, model), 0) + n
        notes.extend(pc.notes)
    task_plans = [_task_plan(view, t, task_calls[t.name]) for t in config.tasks]
    model_plans = _model_plans(config, model_calls, notes)
    phase_plans = tuple(
        PhasePlan(
            phase=pc.phase,
            mode=configured_mode(config, phase),
            calls=pc.total,
            basis=pc.basis,
            title=phase_title(phase),
            short=phase_short(phase),
        )
        for phase, pc in zip(phases, planned, strict=True)
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
    console = console or output_console()
    style: dict[str, Any] = {"title_justify": "left", "box": box.SIMPLE_HEAD}
    console.print(f"[bold]Experiment[/bold] {plan.experiment_id}  ->  {plan.run_folder}")
    if plan.only_models:
        console.print(f"only models: {', '.join(plan.only_models)}")

    models = Table(title="Models", **style)
    for col in ("model", "interface", "roles", "batch phases", "quota", "calls"):
        models.add_column(col, justify="right" if col in ("quota", "calls") else "left")
    for m in plan.models:
        batch = ", ".join(plan.title(p).split()[0] for p in m.batch) or "-"
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
                factors += f" (+{len(t.judge_free_factors)} by other evaluators)"
        tasks.add_row(t.name, t.target, t.nuance, str(t.total), t.evaluation_mode, factors, f"{t.items:,}")
    console.print(tasks)

    phases = Table(title="Calls per phase", **style)
    phases.add_column("task")
    for p in plan.phases:
        phases.add_column(f"{p.short_label}\n{p.mode}", justify="right")
    phases.add_column("total", justify="right")
    for t in plan.tasks:
        phases.add_row(t.name, *[f"{t.calls[p.phase]:,}" for p in plan.phases], f"{t.total_calls:,}")
    phases.add_row("all tasks", *[_count(p) for p in plan.phases], f"{plan.total_calls:,}", style="bold")
    console.print(phases)
    for note in plan.notes:
        console.print(f"note: {note}", highlight=False)


def format_plan(plan: Plan, width: int = 110) -> str:
    """The plan as plain text tables (what ``coeval run --dry-run`` prints)."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None, force_terminal=False, highlight=False)
    print_plan(plan, console)
    return buffer.getvalue()
