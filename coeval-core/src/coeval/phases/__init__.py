"""Pipeline phases. The five standard ones are registered by the core plugin like any
third-party phase (``register_phases``); see :class:`coeval.phases.base.Phase`."""

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
    "standard_phases",
]


def standard_phases() -> list[Phase]:
    """attribute_mapping, rubric_mapping, data_generation, response_collection, evaluation."""
    from coeval.phases.evaluation import EvaluationPhase
    from coeval.phases.generation import DataGenerationPhase
    from coeval.phases.mapping import AttributeMappingPhase, RubricMappingPhase
    from coeval.phases.responses import ResponseCollectionPhase

    return [
        AttributeMappingPhase(),
        RubricMappingPhase(),
        DataGenerationPhase(),
        ResponseCollectionPhase(),
        EvaluationPhase(),
    ]
