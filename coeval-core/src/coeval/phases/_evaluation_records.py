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
from coeval.record_schema import (
    ATTEMPTS,
    COST_USD,
    DATAPOINT_ID,
    ERROR,
    ERROR_KIND,
    EVALUATED_AT,
    EVALUATOR,
    ID,
    JUDGE_MODEL_ID,
    RESPONSE_HASH,
    RESPONSE_ID,
    SCORES,
    STATUS,
    STUDENT_MODEL_ID,
    TASK_ID,
    TEACHER_MODEL_ID,
    USAGE,
    EvaluationRecord,
)
from coeval.scheduler.work import WorkOutcome
from coeval.storage.record_inputs import response_version
from coeval.storage.records import FAILED, OK, call_fields, evaluation_id, utc_now

__all__ = ["call_record", "model_free_record", "record_base"]


def record_base(resp: Mapping[str, Any], judge: str, factor: str | None = None) -> EvaluationRecord:
    return {
        ID: evaluation_id(resp[ID], judge, factor),
        RESPONSE_ID: resp[ID],
        DATAPOINT_ID: resp.get(DATAPOINT_ID),
        TASK_ID: resp.get(TASK_ID),
        TEACHER_MODEL_ID: resp.get(TEACHER_MODEL_ID),
        STUDENT_MODEL_ID: resp.get(STUDENT_MODEL_ID),
        JUDGE_MODEL_ID: judge,
        RESPONSE_HASH: response_version(resp),
    }


def model_free_record(ev: Evaluator, scoring: Scoring, result: Scores | EvaluationFailed) -> dict[str, Any]:
    """The record of a scoring computed without a call (``failed`` when it raised)."""
    scores = {} if isinstance(result, EvaluationFailed) else dict(result)
    record: dict[str, Any] = {**record_base(scoring.response, scoring.scorer.name, scoring.scorer.factor)}
    record.update({EVALUATOR: ev.kind, SCORES: scores, EVALUATED_AT: utc_now(),
                   STATUS: FAILED if isinstance(result, EvaluationFailed) else OK, ATTEMPTS: 0,
                   USAGE: {"input_tokens": 0, "output_tokens": 0}, COST_USD: 0.0})
    extra = getattr(ev, "record_fields", None)
    if callable(extra):
        record.update(extra(scoring, scores))
    if isinstance(result, EvaluationFailed):
        record[ERROR] = f"evaluator: {result.error}"
        record[ERROR_KIND] = "evaluator"
    return record


def call_record(ev: Evaluator, scoring: Scoring, call: EvaluationCall, outcome: WorkOutcome) -> dict[str, Any]:
    """The record of a scoring made by a model call (ok or failed; never for a skipped one)."""
    record: dict[str, Any] = {**record_base(scoring.response, scoring.scorer.name, scoring.scorer.factor)}
    record[EVALUATOR] = ev.kind
    if call.fields is not None:
        record.update(call.fields(outcome))
    else:
        record[SCORES] = dict(outcome.value) if outcome.status == "ok" else {}
    record[EVALUATED_AT] = utc_now()
    record.update(call_fields(outcome))
    return record
