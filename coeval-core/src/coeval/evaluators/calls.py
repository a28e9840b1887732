"""How many model calls phase 5 makes per response, whatever evaluators make them.

The plan and the cost estimate count phase-5 calls without reading datapoints: each
evaluator is asked about a typical generated datapoint (a prompt and a reference answer,
no labels), and every scorer that names a model costs that model one call per response.
So a plugin evaluator that calls a model (``pairwise``) is counted like the LLM judge.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from coeval.config.model import ModelConfig, TaskConfig
from coeval.evaluators.base import as_evaluator
from coeval.record_schema import PROMPT, REFERENCE_RESPONSE

__all__ = ["TYPICAL_DATAPOINT", "calls_per_response"]

#: What a phase-3 datapoint looks like to an evaluator deciding whether it applies.
TYPICAL_DATAPOINT: Mapping[str, Any] = {PROMPT: "", REFERENCE_RESPONSE: ""}


def calls_per_response(
    evaluators: Iterable[Any],
    task: TaskConfig,
    rubric: Mapping[str, Any],
    judges: Sequence[ModelConfig],
    datapoint: Mapping[str, Any] = TYPICAL_DATAPOINT,
) -> Counter[str]:
    """Model name -> calls one usable response of ``task`` costs in phase 5 (first attempts)."""
    calls: Counter[str] = Counter()
    for value in evaluators:
        ev = as_evaluator(value)
        factors = ev.factors(task, rubric, datapoint)
        if not factors:
            continue
        for scorer in ev.scorers(task, factors, judges):
            if scorer.model is not None:
                calls[scorer.model.name] += 1
    return calls
