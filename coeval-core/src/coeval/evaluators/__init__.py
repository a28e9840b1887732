"""Phase-5 evaluators registered by the core: ``llm_judge``, ``label`` (exact match) and
``metric``; the contract is :class:`coeval.evaluators.base.Evaluator`."""

from __future__ import annotations

from coeval.evaluators.base import Evaluator, ModelFreeEvaluator, as_evaluator
from coeval.evaluators.checks import check_evaluators
from coeval.evaluators.judge import LLMJudge
from coeval.evaluators.label import LabelEvaluator
from coeval.evaluators.metric import MetricEvaluator

__all__ = ["Evaluator", "ModelFreeEvaluator", "as_evaluator", "standard_evaluators"]


def standard_evaluators() -> dict[str, Evaluator]:
    """label, metric, the deterministic checks (contains, regex, ...) and llm_judge (model-free
    ones first: they run first in phase 5)."""
    return {"label": LabelEvaluator(), "metric": MetricEvaluator(), **check_evaluators(), "llm_judge": LLMJudge()}
