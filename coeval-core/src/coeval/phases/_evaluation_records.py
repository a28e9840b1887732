"""The evaluation records phase 5 writes, whatever evaluator scored them.

Every record starts with the same ids (``id``, ``response_id``, ``datapoint_id``,
``task_id``, ``teacher_model_id``, ``student_model_id``, ``judge_model_id``) and
``evaluator``; a model-free record then carries its scores and zero usage, a model call's
record the fields its evaluator adds and the call's transcript (docs/data-format.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coeval.evaluators.base import EvaluationCall, EvaluationFailed, Evaluator, Scores, Scoring
from coeval.scheduler.work import WorkOutcome
from coeval.storage.record_inputs import RESPONSE_HASH, response_version
from coeval.storage.records import call_fields, evaluation_id, utc_now

__all__ = ["call_record", "model_free_record", "record_base"]


def record_base(resp: Mapping[str, Any], judge: str, factor: str | None = None) -> dict[str, Any]:
    return {
        "id": evaluation_id(resp["id"], judge, factor),
        "response_id": resp["id"],
        "datapoint_id": resp.get("datapoint_id"),
        "task_id": resp.get("task_id"),
        "teacher_model_id": resp.get("teacher_model_id"),
        "student_model_id": resp.get("student_model_id"),
        "judge_model_id": judge,
        RESPONSE_HASH: response_version(resp),
    }


def model_free_record(ev: Evaluator, scoring: Scoring, result: Scores | EvaluationFailed) -> dict[str, Any]:
    """The record of a scoring computed without a call (``failed`` when it raised)."""
    scores = {} if isinstance(result, EvaluationFailed) else dict(result)
    record = record_base(scoring.response, scoring.scorer.name, scoring.scorer.factor)
    record.update({"evaluator": ev.kind, "scores": scores, "evaluated_at": utc_now(),
                   "status": "failed" if isinstance(result, EvaluationFailed) else "ok", "attempts": 0,
                   "usage": {"input_tokens": 0, "output_tokens": 0}, "cost_usd": 0.0})
    extra = getattr(ev, "record_fields", None)
    if callable(extra):
        record.update(extra(scoring, scores))
    if isinstance(result, EvaluationFailed):
        record["error"] = f"evaluator: {result.error}"
        record["error_kind"] = "evaluator"
    return record


def call_record(ev: Evaluator, scoring: Scoring, call: EvaluationCall, outcome: WorkOutcome) -> dict[str, Any]:
    """The record of a scoring made by a model call (ok or failed; never for a skipped one)."""
    record = record_base(scoring.response, scoring.scorer.name, scoring.scorer.factor)
    record["evaluator"] = ev.kind
    if call.fields is not None:
        record.update(call.fields(outcome))
    else:
        record["scores"] = dict(outcome.value) if outcome.status == "ok" else {}
    record["evaluated_at"] = utc_now()
    record.update(call_fields(outcome))
    return record
