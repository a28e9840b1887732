"""Which registered phases a run goes through, in which mode, and whose models they call.

The phases themselves come in run order from :func:`coeval.config.phase_order.ordered_phases`;
this module selects among them for one run (``--continue`` skips the complete ones) and
decides which models need an interface, and which calls go through a batch API.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, MutableMapping, Sequence
from typing import Any

from coeval.config.model import Config, ModelConfig
from coeval.config.phase_modes import phase_modes
from coeval.phase_ids import DATA_GENERATION, EVALUATION, RECORD_PHASES, RESPONSE_COLLECTION
from coeval.phases.base import Phase, RunView, Survey
from coeval.phases.info import configured_mode
from coeval.phases.survey_memo import survey_of

__all__ = ["LIMIT_KEY", "PIPELINED_MODES", "PIPELINED_PHASES", "batch_enabled", "completed_phases", "models_needed", "phase_roles", "phases_that_may_run", "run_mode"]

#: the phases whose calls ``batch_enabled: true`` sends through a batch API
_RECORD_PHASES = RECORD_PHASES

#: The phases a run may run at once (pipelined), each fed by the one before it, and the modes
#: that allow it: Keep and Model decide from what exists when the phase starts.
PIPELINED_PHASES = (DATA_GENERATION, RESPONSE_COLLECTION, EVALUATION)
PIPELINED_MODES = frozenset({"New", "Extend"})
#: ``meta.json``'s field for a ``--limit`` slice (:mod:`coeval.run.limits` writes it)
LIMIT_KEY = "limit"


def completed_phases(meta: Mapping[str, Any]) -> set[str]:
    """``phases_completed``, unless a ``--limit`` slice completed them: then none (count
    the records instead)."""
    if meta.get(LIMIT_KEY):
        return set()
    return set(meta.get("phases_completed") or [])


def run_mode(config: Config, phase: Phase, *, continue_run: bool) -> str:
    """The mode ``phase`` runs in: the config's, or on ``--continue`` the one the phase
    declares in ``continue_mode`` (the mapping phases: Keep), else Extend when it accepts
    it (a phase that has no Extend keeps its configured mode)."""
    if continue_run:
        declared = getattr(phase, "continue_mode", None)
        if isinstance(declared, str):
            return declared
        if "Extend" in phase_modes(phase):
            return "Extend"
    return configured_mode(config, phase)


def phases_that_may_run(
    phases: Sequence[Phase],
    view: RunView,
    completed: Collection[str],
    *,
    continue_run: bool,
    surveys: MutableMapping[str, Survey],
) -> list[str]:
    """Ids of the phases this run may execute: all of them, or on ``--continue`` those from
    the first one that is not complete. The surveys made on the way are kept in ``surveys``
    (on a finished run of a million records a survey is the whole cost of --continue)."""
    for i, phase in enumerate(phases):
        if continue_run and phase.name in completed:
            survey = surveys[phase.name] = survey_of(phase, view)
            if survey.complete:
                continue
        return [p.name for p in phases[i:]]
    return []


def phase_roles(phase: Phase) -> tuple[str, ...]:
    """The roles whose models a phase calls, as it declares them in ``roles`` (none when it
    does not: it makes no call)."""
    return tuple(getattr(phase, "roles", ()) or ())


def models_needed(view: RunView, phases: Iterable[Phase], only: Collection[str]) -> dict[str, ModelConfig]:
    """The models whose interfaces the given phases call (``--only-models`` narrows phases
    3-5 and plugin phases; phases 1-2 ask every teacher)."""
    needed: dict[str, ModelConfig] = {}
    for phase in phases:
        for role in phase_roles(phase):
            for m in view.callable_models(role):
                if getattr(phase, "asks_every_model", False) or not only or m.name in only:
                    needed[m.name] = m
    return needed


def batch_enabled(config: Config, model: ModelConfig, phase: str) -> bool:
    """Whether ``model``'s calls of ``phase`` go through its provider's batch API:
    ``models[].batch_enabled`` when set (true: every record-writing phase), else
    ``experiment.batch[interface][phase]``."""
    if model.batch_enabled is not None:
        return bool(model.batch_enabled) and phase in _RECORD_PHASES
    return bool(config.experiment.batch.get(model.interface, {}).get(phase, False))
