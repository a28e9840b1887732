"""Which evaluator scores which rubric factor.

A rubric factor is scored by the LLM judge unless it says otherwise: ``{metric: bleu}``
factors go to the ``metric`` evaluator, factors named after a ``label_attributes`` entry to
``label``, and ``{description: ..., evaluator: NAME}`` factors to the evaluator registered
as NAME (``evaluator: llm_judge`` is the default spelled out).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coeval.config.model import TaskConfig
from coeval.evaluators.metric import metric_factors

__all__ = ["JUDGE_EVALUATOR", "judge_factors", "routed_factors", "routed_to", "weight_only"]

#: Registry name (and record ``evaluator``) of the LLM judge.
JUDGE_EVALUATOR = "llm_judge"


def routed_to(spec: Any) -> str | None:
    """The evaluator a factor's spec names with ``evaluator:``, or None."""
    if isinstance(spec, Mapping):
        name = spec.get("evaluator")
        if isinstance(name, str) and name:
            return name
    return None


def routed_factors(rubric: Mapping[str, Any], evaluator: str) -> list[str]:
    """The factors of ``rubric`` that name ``evaluator``."""
    return [str(f) for f, spec in rubric.items() if routed_to(spec) == evaluator]


def weight_only(spec: Any) -> bool:
    """A rubric entry that only weights a factor another evaluator scores (``pass@1: {weight: 2}``)."""
    return isinstance(spec, Mapping) and set(spec) == {"weight"}


def judge_factors(task: TaskConfig, rubric: Mapping[str, Any]) -> list[str]:
    """Rubric factors the LLM judge scores (the rest go to other evaluators, and a
    weight-only entry weights a factor another evaluator scores)."""
    metric = metric_factors(rubric)
    labels = set(task.label_attributes)
    return [
        str(f) for f, spec in rubric.items()
        if f not in metric and f not in labels and routed_to(spec) in (None, JUDGE_EVALUATOR) and not weight_only(spec)
    ]
