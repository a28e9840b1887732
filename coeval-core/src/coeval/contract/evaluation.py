"""The phase-5 evaluator contract: the :class:`Evaluator` protocol and the records it is
handed and returns (what a plugin's evaluator implements; :mod:`coeval.evaluators.base`
documents the flow and adds :class:`~coeval.evaluators.base.ModelFreeEvaluator`).

It sits in the contract, below the evaluators that implement it, and names only records:
the config's models and tasks and the model-call vocabulary. The outcome handed to
``EvaluationCall.fields`` is the scheduler's :class:`coeval.scheduler.WorkOutcome`; it is
typed ``Any`` here because the scheduler builds on this contract, not the other way round.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

if TYPE_CHECKING:
    from coeval.config.model import ModelConfig, TaskConfig
    from coeval.interfaces.base import GenerateRequest, GenerateResult

__all__ = [
    "EvaluationCall",
    "EvaluationFailed",
    "EvaluationRequest",
    "EvaluationResult",
    "Evaluator",
    "Scorer",
    "Scores",
    "Scoring",
    "SubmitCalls",
]

#: ``{factor: value in [0, 1]}``.
Scores = dict[str, float]


@attrs.frozen
class Scorer:
    """Who writes one record per response.

    Attributes:
        name: written as ``judge_model_id`` and in the record id (``label``, a judge model's
            name, ``pairwise:judge-a``); it names the evaluation file too (``:`` as ``-``).
        factors: the factors each record scores.
        factor: set for one-factor records (record id ``{response}__{name}__{factor}``).
        model: the model that makes the call, for evaluators that call one (``--only-models``
            and mode ``New`` apply to it); None for model-free scorers.
    """

    name: str
    factors: tuple[str, ...]
    factor: str | None = None
    model: ModelConfig | None = None

    @property
    def file_name(self) -> str:
        return self.name.replace(":", "-")


@attrs.frozen
class Scoring:
    """One record an evaluator owes: ``response`` scored on ``scorer.factors``."""

    record_id: str
    scorer: Scorer
    task: TaskConfig
    rubric: Mapping[str, Any]
    datapoint: Mapping[str, Any]
    response: Mapping[str, Any]


@attrs.frozen
class EvaluationRequest:
    """What :meth:`Evaluator.evaluate` is handed: every record it still owes in this run, in
    response order (a sequence that may be long: build calls lazily through ``submit``)."""

    scorings: Sequence[Scoring]


@attrs.frozen
class EvaluationFailed:
    """A model-free scoring that could not be computed: written as a ``failed`` record
    (``error_kind: evaluator``) that ``--continue`` retries."""

    error: str


#: Per scoring, in order: scores (written as an ``ok`` record), a failure, or None when the
#: scoring went to ``submit`` (its record is written when its call finishes).
EvaluationResult = Scores | EvaluationFailed | None


@attrs.frozen
class EvaluationCall:
    """The model call that produces one scoring's record; the model is ``scorer.model``.

    Attributes:
        request: what to send.
        parse: reply -> scores (values in [0, 1], or score words such as the LLM judge's
            ``High``/``Medium``/``Low``); raise :class:`coeval.prompts.errors.OutputParseError` to have the
            call retried (up to ``generation_retries``, then a ``failed`` record).
        fields: outcome (a :class:`coeval.scheduler.WorkOutcome`) -> the record's fields after ``evaluator`` (default
            ``{"scores": ...}``); the LLM judge adds its mode, factor and rationale.
        meta: context for progress and logs (task, judge, student).
    """

    request: GenerateRequest
    parse: Callable[[GenerateResult], Mapping[str, Any]]
    fields: Callable[[Any], dict[str, Any]] | None = None
    meta: dict[str, Any] = attrs.field(factory=dict)


#: ``await submit(scorings, build)``: run ``build(scoring)``'s call for each scoring through
#: the scheduler and write each record as its call finishes; returns when all are done
#: (or skipped by quota, budget or cancellation, left for ``--continue``).
SubmitCalls = Callable[[Sequence[Scoring], Callable[[Scoring], EvaluationCall]], Awaitable[None]]


@runtime_checkable
class Evaluator(Protocol):
    """A phase-5 scorer, registered with ``register_evaluators``.

    .. versionchanged:: 0.2
        ``evaluate`` is async, receives every owed :class:`Scoring` and ``submit`` (the
        scheduler's); ``scorers`` is new. 0.1 evaluators are adapted by :func:`as_evaluator`.

    Example (a model-free one; see :class:`ModelFreeEvaluator` for the shortcut)::

        class Shouting:
            name = kind = "shouting"

            def factors(self, task, rubric, datapoint):
                return ["calm"]

            def scorers(self, task, factors, judges):
                return [Scorer(self.name, tuple(factors))]

            async def evaluate(self, request, submit):
                return [{"calm": 0.0 if s.response["response"].isupper() else 1.0}
                        for s in request.scorings]
    """

    #: Registry name; a rubric factor routes to it with ``evaluator: NAME``.
    name: str
    #: Written as the record's ``evaluator``: "llm_judge" | "label" | "metric" | "gold" | ...
    kind: str

    def factors(self, task: TaskConfig, rubric: Mapping[str, Any], datapoint: Mapping[str, Any]) -> list[str]:
        """Factors this evaluator scores for this datapoint; empty when it does not apply.

        :param task: the task of the response.
        :param rubric: the task's rubric (factor -> criterion text or spec mapping).
        :param datapoint: the phase-3 datapoint the response answers (``{}`` if missing).
        """
        ...

    def scorers(self, task: TaskConfig, factors: Sequence[str], judges: Sequence[ModelConfig]) -> list[Scorer]:
        """The records each response gets for ``factors`` (asked once per distinct factors).

        :param factors: what :meth:`factors` returned (never empty).
        :param judges: the run's judge models that make calls, in config order.
        :returns: one :class:`Scorer` per record; a scorer with a ``model`` makes calls.
        """
        ...

    async def evaluate(self, request: EvaluationRequest, submit: SubmitCalls) -> list[EvaluationResult]:
        """Score every owed record.

        :param request: ``request.scorings``: the records still owed under the run's mode
            (``--continue`` leaves out those already ``ok``), in response order.
        :param submit: ``await submit(scorings, build)`` runs ``build(scoring)``'s
            :class:`EvaluationCall` for each through the scheduler and writes each record as
            its call finishes.
        :returns: one :data:`EvaluationResult` per scoring, in order: scores, an
            :class:`EvaluationFailed`, or None for a scoring handed to ``submit``.
        """
        ...
