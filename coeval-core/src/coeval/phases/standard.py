"""The five standard phases, in pipeline order; the core plugin registers them."""

from __future__ import annotations

from coeval.phases.base import Phase
from coeval.phases.evaluation import EvaluationPhase
from coeval.phases.generation import DataGenerationPhase
from coeval.phases.mapping import AttributeMappingPhase, RubricMappingPhase
from coeval.phases.responses import ResponseCollectionPhase


def standard_phases() -> list[Phase]:
    """attribute_mapping, rubric_mapping, data_generation, response_collection, evaluation."""
    return [
        AttributeMappingPhase(),
        RubricMappingPhase(),
        DataGenerationPhase(),
        ResponseCollectionPhase(),
        EvaluationPhase(),
    ]
