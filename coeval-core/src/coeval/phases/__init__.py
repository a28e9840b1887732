"""Pipeline phases. The five standard ones (:mod:`coeval.phases.standard`) are registered
by the core plugin like any third-party phase (``register_phases``); see
:class:`coeval.phases.base.Phase`."""

from __future__ import annotations

from coeval.phases.base import (
    Counts,
    Phase,
    PhaseContext,
    PhaseError,
    PhaseRefusedError,
    PhaseResult,
    PlannedCalls,
    PlanningPhase,
    RunView,
    Survey,
)

__all__ = [
    "Counts",
    "Phase",
    "PhaseContext",
    "PhaseError",
    "PhaseRefusedError",
    "PhaseResult",
    "PlannedCalls",
    "PlanningPhase",
    "RunView",
    "Survey",
]

