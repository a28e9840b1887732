"""Deterministic checks as rubric factors: pass (1.0) or fail (0.0), no model call.

A rubric factor names a check with ``evaluator:`` and gives its settings under ``params``::

    rubric:
      mentions_refund: {evaluator: contains, params: {value: refund}}
      no_apology:      {evaluator: not_contains, params: {value: sorry}}
      order_number:    {evaluator: regex, params: {pattern: "#[0-9]{6}"}}
      right_answer:    {evaluator: equals}                  # against the reference answer
      valid_json:      {evaluator: json_valid}
      has_fields:      {evaluator: json_schema, params: {schema: {type: object, required: [id]}}}
      short:           {evaluator: max_words, params: {limit: 50}}
      polite:          {evaluator: python, params: {function: "my_checks:is_polite"}}

Each check is registered as its own evaluator (record ``judge_model_id`` and ``evaluator``:
the check's name, e.g. ``contains``), scores every response of a datapoint in one go, and
costs no call, so ``coeval plan`` charges nothing for it. The parameters are validated
before a run (rule V-60, :func:`param_problem`). ``python`` imports the user's function
from the config's folder (:mod:`coeval.answer_checks.user_code`); it gets the answer text and
the datapoint and returns a bool or a number in [0, 1].
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coeval.answer_checks.functions import CHECK_NAMES, check_params, run_check
from coeval.config.model import TaskConfig
from coeval.evaluators.base import ModelFreeEvaluator, Scoring
from coeval.evaluators.routing import routed_factors
from coeval.record_schema import CHECKS, RESPONSE

__all__ = ["CheckEvaluator", "check_evaluators"]


class CheckEvaluator(ModelFreeEvaluator):
    """One deterministic check, registered under its own name."""

    #: Its factors are the rubric's factors that name it, whatever the datapoint: phase 5
    #: asks once per task, not once per response.
    factors_per_task = True

    def __init__(self, name: str) -> None:
        if name not in CHECK_NAMES:
            raise ValueError(f"unknown check {name!r}; known: {', '.join(CHECK_NAMES)}")
        self.name = name
        self.kind = name

    def factors(self, task: TaskConfig, rubric: Mapping[str, Any], datapoint: Mapping[str, Any]) -> list[str]:
        return routed_factors(rubric, self.name)

    def score(
        self,
        task: TaskConfig,
        rubric: Mapping[str, Any],
        datapoint: Mapping[str, Any],
        responses: list[Mapping[str, Any]],
    ) -> list[dict[str, float]]:
        factors = {f: check_params(rubric.get(f)) for f in self.factors(task, rubric, datapoint)}
        return [
            {f: run_check(self.name, str(r.get(RESPONSE) or ""), params, datapoint) for f, params in factors.items()}
            for r in responses
        ]

    def record_fields(self, scoring: Scoring, scores: Mapping[str, float]) -> dict[str, Any]:
        """``checks``: factor -> the check and parameters that scored it (what the record means)."""
        return {CHECKS: {f: {"check": self.name, "params": dict(check_params(scoring.rubric.get(f)))} for f in scores}}


def check_evaluators() -> dict[str, CheckEvaluator]:
    """Every deterministic check, by its registry name."""
    return {name: CheckEvaluator(name) for name in CHECK_NAMES}
