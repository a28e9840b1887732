"""Phase-5 evaluators registered by the core: ``label`` (exact match) and ``metric``."""

from __future__ import annotations

from typing import Any

from coeval.evaluators.base import Evaluator

__all__ = ["Evaluator", "standard_evaluators"]


def standard_evaluators() -> dict[str, Any]:
    from coeval.evaluators.label import LabelEvaluator
    from coeval.evaluators.metric import MetricEvaluator

    return {"label": LabelEvaluator(), "metric": MetricEvaluator()}
