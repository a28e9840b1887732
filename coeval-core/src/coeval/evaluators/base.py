"""Phase-5 scorers that make no model call (label exact-match, metrics, benchmark gold).

For every response in phase 5, the evaluation phase asks each registered evaluator whether
it applies; one that does returns scores in [0, 1] per factor, written as a record of its own
(``evaluator`` = its kind, ``judge_model_id`` = its name; see docs/data-format.md). The LLM
judge is not one of these: it goes through the scheduler like any model call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from coeval.config.model import TaskConfig

__all__ = ["Evaluator"]


@runtime_checkable
class Evaluator(Protocol):
    #: Written as ``judge_model_id`` of its records, e.g. "label" or "metric:bleu" or "gold".
    name: str
    #: Written as ``evaluator``: "label" | "metric" | "gold" | ...
    kind: str

    def factors(self, task: TaskConfig, rubric: Mapping[str, Any], datapoint: Mapping[str, Any]) -> list[str]:
        """Rubric factors (or extra score names) this evaluator scores for this datapoint;
        empty when it does not apply."""

    def evaluate(
        self,
        task: TaskConfig,
        rubric: Mapping[str, Any],
        datapoint: Mapping[str, Any],
        responses: list[Mapping[str, Any]],
    ) -> list[dict[str, float]]:
        """Scores per response (same order), each ``{factor: value in [0, 1]}``.
        Batched so metrics such as BERTScore can vectorise."""
