"""``pairwise``: a judge that compares a student's answer with the reference answer.

A rubric factor routes to it with ``evaluator: pairwise``::

    rubric:
      preference: {description: "Which answer would a reader rather get?", evaluator: pairwise}

For every usable response whose datapoint has a reference answer, each judge model is
shown both answers (the student's as A, the reference as B) and asked which is better on
that factor's criterion. The verdict is written on the judges' scale: ``High`` when the
student's answer wins, ``Medium`` for a tie, ``Low`` when the reference wins, so the
analysis reads it like any judge score.

The calls go through ``submit``, the scheduler's: quotas, retries, batching, the budget
and the call ledger apply, and each record is written when its call finishes, so an
interrupted run resumes with only the missing ones. Records have the per-factor id
``{response_id}__{judge}__{factor}``, ``judge_model_id`` the judge and ``evaluator:
pairwise``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from coeval import (
    EvaluationCall,
    EvaluationRequest,
    EvaluationResult,
    GenerateRequest,
    GenerateResult,
    ModelConfig,
    OutputParseError,
    Scorer,
    Scoring,
    SubmitCalls,
    TaskConfig,
    WorkOutcome,
    routed_factors,
)

__all__ = ["VERDICT_SCORES", "PairwiseJudge"]

#: The judge's verdict -> the score the student's answer gets.
VERDICT_SCORES = {"A": "High", "tie": "Medium", "B": "Low"}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"winner": {"enum": list(VERDICT_SCORES)}},
    "required": ["winner"],
    "additionalProperties": False,
}
PROMPT = """You compare two answers to the same request.

Request:
{input}

Answer A:
{answer}

Answer B:
{reference}

Criterion ({factor}): {criterion}

Which answer meets the criterion better? Reply with JSON only: {{"winner": "A"}}, {{"winner": "B"}} or {{"winner": "tie"}}."""


def _criterion(spec: Any) -> str:
    return str(spec.get("description") or "") if isinstance(spec, Mapping) else str(spec)


def parse_verdict(text: str) -> str:
    """``A``, ``B`` or ``tie`` from the judge's reply; a reply without one is retried."""
    try:
        winner = json.loads(text.strip()).get("winner")
    except (ValueError, AttributeError):
        winner = None
    if winner not in VERDICT_SCORES:
        raise OutputParseError(f'expected {{"winner": "A" | "B" | "tie"}}, got {text[:80]!r}')
    return str(winner)


class PairwiseJudge:
    """A :class:`coeval.Evaluator` whose scorers are the run's judge models."""

    name = "pairwise"
    kind = "pairwise"

    def factors(self, task: TaskConfig, rubric: Mapping[str, Any], datapoint: Mapping[str, Any]) -> list[str]:
        if not isinstance(datapoint.get("reference_response"), str):
            return []
        return routed_factors(rubric, self.name)

    def scorers(self, task: TaskConfig, factors: Sequence[str], judges: Sequence[ModelConfig]) -> list[Scorer]:
        return [Scorer(judge.name, (factor,), factor, judge) for judge in judges for factor in factors]

    async def evaluate(self, request: EvaluationRequest, submit: SubmitCalls) -> list[EvaluationResult]:
        await submit(request.scorings, self.call)
        return [None] * len(request.scorings)  # every record is written as its call finishes

    def call(self, scoring: Scoring) -> EvaluationCall:
        judge, factor = scoring.scorer.model, scoring.scorer.factor
        assert judge is not None and factor is not None
        prompt = PROMPT.format(
            input=scoring.response.get("input") or scoring.datapoint.get("prompt", ""),
            answer=scoring.response.get("response", ""),
            reference=scoring.datapoint.get("reference_response", ""),
            factor=factor,
            criterion=_criterion(scoring.rubric.get(factor)),
        )

        def parse(result: GenerateResult) -> dict[str, str]:
            return {"winner": parse_verdict(result.text)}

        def fields(outcome: WorkOutcome) -> dict[str, Any]:
            winner = outcome.value["winner"] if outcome.status == "ok" else None
            return {
                "factor": factor,
                "compared_with": "reference",
                "winner": winner,
                "scores": {factor: VERDICT_SCORES[winner]} if winner else {},
            }

        return EvaluationCall(
            request=GenerateRequest(prompt=prompt, params=judge.params_for("judge"), role="judge",
                                    json_schema=SCHEMA, schema_name="pairwise"),
            parse=parse,
            fields=fields,
            meta={"task": scoring.task.name, "judge": judge.name, "student": scoring.response.get("student_model_id")},
        )
