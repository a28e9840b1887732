"""The phase-5 evaluator contract: everything that scores a student's response.

Every scorer of phase 5 is an :class:`Evaluator` registered through ``register_evaluators``:
the LLM judge (``llm_judge``), label exact match (``label``), reference metrics
(``metric``), benchmark gold answers (``gold``) and any plugin's, such as a pairwise judge.
Phase 5 treats them alike:

1. ``factors(task, rubric, datapoint)``: which rubric factors (or extra score names) the
   evaluator scores for a datapoint; empty when it does not apply.
2. ``scorers(task, factors, judges)``: who writes the records for one response, each a
   :class:`Scorer` (its name is the record's ``judge_model_id``). A model-free evaluator has
   one scorer, itself; the LLM judge has one per judge model (and per factor in
   ``per_factor`` mode).
3. ``evaluate(request, submit)``: is handed every :class:`Scoring` (one record) still owed
   under the run's mode, all at once, and either returns scores computed without a model,
   or hands the scorings to ``submit`` with a builder of their model calls. ``submit`` is
   the scheduler's: quotas, retries, batching, the budget and the call ledger all apply,
   and each record is written (and so checkpointed) the moment its call finishes.

Optional hints that spare phase 5 reading every datapoint: ``factors_per_task = True``
(its factors are the same for every datapoint of a task), ``applies(task, rubric)`` (False:
it scores nothing of that task) and ``datapoint_fields`` (a tuple of datapoint keys: it
scores only datapoints carrying one of them, so a run whose datapoint files hold none of
those keys is not read for it).

Record ids are ``{response_id}__{scorer}`` (``__{factor}`` for per-factor scorers); see
docs/data-format.md. Changed in 0.2: ``evaluate`` is async, receives ``submit`` and the
owed scorings; an evaluator written against 0.1 (a synchronous
``evaluate(task, rubric, datapoint, responses)``) is adapted by :func:`as_evaluator`.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from coeval.config.model import ModelConfig, TaskConfig
from coeval.contract.evaluation import (
    EvaluationCall,
    EvaluationFailed,
    EvaluationRequest,
    EvaluationResult,
    Evaluator,
    Scorer,
    Scores,
    Scoring,
    SubmitCalls,
)
from coeval.record_schema import DATAPOINT_ID

__all__ = [
    "EvaluationCall",
    "EvaluationFailed",
    "EvaluationRequest",
    "EvaluationResult",
    "Evaluator",
    "ModelFreeEvaluator",
    "Scorer",
    "Scores",
    "Scoring",
    "SubmitCalls",
    "as_evaluator",
]


class ModelFreeEvaluator:
    """Base of the evaluators that score without a model call (label, metric, gold).

    A subclass sets ``name`` and ``kind`` and implements ``factors`` and ``score``; scoring
    runs in a worker thread, one call per datapoint with all of its responses (so a metric
    such as BERTScore batches them), and an exception fails that datapoint's records only.
    """

    name: str
    kind: str

    def factors(self, task: TaskConfig, rubric: Mapping[str, Any], datapoint: Mapping[str, Any]) -> list[str]:
        raise NotImplementedError

    def score(
        self,
        task: TaskConfig,
        rubric: Mapping[str, Any],
        datapoint: Mapping[str, Any],
        responses: list[Mapping[str, Any]],
    ) -> list[dict[str, float]]:
        """Scores per response (same order), each ``{factor: value in [0, 1]}``."""
        raise NotImplementedError

    def record_fields(self, scoring: Scoring, scores: Mapping[str, float]) -> dict[str, Any]:
        """Extra fields for an ok record (the metric evaluator names its metrics)."""
        return {}

    def scorers(self, task: TaskConfig, factors: Sequence[str], judges: Sequence[ModelConfig]) -> list[Scorer]:
        return [Scorer(self.name, tuple(factors))]

    async def evaluate(self, request: EvaluationRequest, submit: SubmitCalls) -> list[EvaluationResult]:
        by_datapoint: dict[str, list[int]] = {}
        for i, scoring in enumerate(request.scorings):
            by_datapoint.setdefault(str(scoring.response.get(DATAPOINT_ID)), []).append(i)
        out: list[EvaluationResult] = [None] * len(request.scorings)
        for indexes in by_datapoint.values():
            first = request.scorings[indexes[0]]
            responses = [request.scorings[i].response for i in indexes]
            try:
                scores: list[EvaluationResult] = list(
                    await asyncio.to_thread(self.score, first.task, first.rubric, first.datapoint, responses)
                )
            except Exception as exc:
                scores = [EvaluationFailed(f"{type(exc).__name__}: {exc}")] * len(indexes)
            for i, result in zip(indexes, scores, strict=True):
                out[i] = result
        return out


class _SyncEvaluator(ModelFreeEvaluator):
    """A 0.1 evaluator (synchronous ``evaluate(task, rubric, datapoint, responses)``)."""

    def __init__(self, legacy: Any) -> None:
        self.legacy = legacy
        self.name = str(legacy.name)
        self.kind = str(legacy.kind)

    def factors(self, task: TaskConfig, rubric: Mapping[str, Any], datapoint: Mapping[str, Any]) -> list[str]:
        # 0.1 evaluators were never asked about a response whose datapoint is missing
        return list(self.legacy.factors(task, rubric, datapoint)) if datapoint else []

    def score(
        self,
        task: TaskConfig,
        rubric: Mapping[str, Any],
        datapoint: Mapping[str, Any],
        responses: list[Mapping[str, Any]],
    ) -> list[dict[str, float]]:
        return list(self.legacy.evaluate(task, rubric, datapoint, responses))


def as_evaluator(value: Any) -> Evaluator:
    """The registered object as an :class:`Evaluator`: 0.2 evaluators as they are, 0.1 ones
    (synchronous ``evaluate``, no ``scorers``) adapted to score without a model call."""
    if inspect.iscoroutinefunction(getattr(value, "evaluate", None)) and callable(getattr(value, "scorers", None)):
        return value  # type: ignore[no-any-return]
    if callable(getattr(value, "evaluate", None)) and callable(getattr(value, "factors", None)):
        return _SyncEvaluator(value)
    raise TypeError(
        f"evaluator {getattr(value, 'name', value)!r} has no evaluate/factors methods; "
        "see coeval.evaluators.base.Evaluator"
    )
