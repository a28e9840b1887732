"""The ``gold`` evaluator: score a student's answer against a benchmark item's gold answer.

It applies to every response whose datapoint carries a gold answer (``gold_metric`` with
``label`` / ``labels``; see docs/data-format.md) and returns ``{"gold": score}`` in [0, 1],
using the dataset's own way of scoring:

* ``choice``: 1 when the option letter extracted from the reply is the gold letter;
* ``number``: 1 when the number extracted from the reply equals the gold number;
* ``bleu`` / ``bertscore``: the metric of that name from the metrics registry, against the
  best of the reference texts; with ``incorrect_labels``, 1 when the reply is closer to a
  true reference than to every false one (TruthfulQA's "BLEU accuracy").

It scores the student's answer, never the reference against itself. When a similarity
metric is not installed (it comes with coeval-analysis), the evaluator does not apply to
those datapoints and says so once in the log, rather than writing a made-up score.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from coeval.evaluators.base import ModelFreeEvaluator

from coeval_benchmarks.extraction import extract_choice, extract_code, extract_number, parse_number

if TYPE_CHECKING:
    from coeval.config.model import TaskConfig
    from coeval.plugins.manager import Registries

__all__ = ["GoldEvaluator", "gold_metric_of", "metric_available", "score_choice", "score_number"]

log = logging.getLogger(__name__)

SIMILARITY_METRICS = ("bleu", "bertscore")


def metric_available(name: str, metrics: Collection[str]) -> bool:
    """Whether a gold metric is among the registered ``metrics`` (names)."""
    return name in metrics


def gold_metric_of(datapoint: Mapping[str, Any]) -> str | None:
    """How this datapoint's gold answer is scored, or None when it has no usable gold."""
    metric = datapoint.get("gold_metric")
    label = datapoint.get("label")
    labels = datapoint.get("labels")
    if metric == "choice" and isinstance(label, str) and label.strip():
        return "choice"
    if metric == "number" and parse_number(label if isinstance(label, str) else None) is not None:
        return "number"
    if metric in SIMILARITY_METRICS and _texts(labels):
        return str(metric)
    return None


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str) and v.strip()]
    return []


def score_choice(reply: str | None, datapoint: Mapping[str, Any]) -> float:
    choices = datapoint.get("choices")
    options = choices if isinstance(choices, Mapping) else None
    letters = "".join(options) if options else "ABCDE"
    picked = extract_choice(reply, letters, options)
    return 1.0 if picked is not None and picked == str(datapoint["label"]).strip().upper() else 0.0


def score_number(reply: str | None, datapoint: Mapping[str, Any]) -> float:
    gold = parse_number(str(datapoint["label"]))
    found = extract_number(reply)
    if gold is None or found is None:
        return 0.0
    return 1.0 if abs(found - gold) <= Decimal("1e-6") * max(Decimal(1), abs(gold)) else 0.0


class GoldEvaluator(ModelFreeEvaluator):
    """Registered as evaluator ``gold`` (kind ``gold``); see the module docstring."""

    name = "gold"
    kind = "gold"
    #: it scores only datapoints with a ``gold_metric``: a run whose datapoints have none is not read for it
    datapoint_fields = ("gold_metric",)

    def __init__(self, metric_factories: Mapping[str, Any] | None = None) -> None:
        #: name -> factory; None until the plugin registries are bound (no metric known then).
        self._factories = metric_factories
        self._metrics: dict[str, Any] = {}

    def bind_registries(self, registries: Registries) -> None:
        """Take the registered metrics (called once the plugins' registries are filled)."""
        if self._factories is None:
            self._factories = {entry.name: entry.value for entry in registries.metrics}

    # -- the Evaluator contract (model-free: ``score`` per datapoint) ------------------------
    def factors(self, task: TaskConfig, rubric: Mapping[str, Any], datapoint: Mapping[str, Any]) -> list[str]:
        metric = gold_metric_of(datapoint)
        if metric is None:
            return []
        if metric in SIMILARITY_METRICS and self._metric(metric) is None:
            return []
        return ["gold"]

    def score(
        self,
        task: TaskConfig,
        rubric: Mapping[str, Any],
        datapoint: Mapping[str, Any],
        responses: list[Mapping[str, Any]],
    ) -> list[dict[str, float]]:
        metric = gold_metric_of(datapoint)
        replies = [str(r["response"]) if isinstance(r.get("response"), str) else "" for r in responses]
        if metric == "choice":
            return [{"gold": score_choice(reply, datapoint)} for reply in replies]
        if metric == "number":
            return [{"gold": score_number(reply, datapoint)} for reply in replies]
        if metric in SIMILARITY_METRICS:
            return [{"gold": s} for s in self._similarity(metric, replies, datapoint)]
        raise ValueError(f"datapoint {datapoint.get('id')!r} has no gold answer to score against")

    # -- similarity metrics -----------------------------------------------------------------
    def _metric(self, name: str) -> Any | None:
        if name in self._metrics:
            return self._metrics[name]
        scorer = None
        metrics = self._factories or {}
        if name not in metrics:
            log.warning(
                "gold scoring needs the %r metric, which no installed plugin registers "
                "(install coeval-analysis); benchmark items scored by %s get no gold score",
                name,
                name,
            )
        else:
            try:
                scorer = metrics[name]()
            except Exception as exc:  # a metric that cannot load (missing model files) must not stop phase 5
                log.warning("the %r metric could not be loaded (%s); those items get no gold score", name, exc)
        self._metrics[name] = scorer
        return scorer

    def _similarity(self, metric: str, replies: Sequence[str], datapoint: Mapping[str, Any]) -> list[float]:
        scorer = self._metric(metric)
        if scorer is None:
            raise RuntimeError(f"the {metric!r} metric is not available; gold scores cannot be computed")
        true_refs = _texts(datapoint.get("labels"))
        false_refs = _texts(datapoint.get("incorrect_labels"))
        refs = true_refs + false_refs
        if datapoint.get("answer_format") == "code":
            prefix = datapoint.get("code_prefix")
            candidates = [extract_code(r, prefix if isinstance(prefix, str) else None) for r in replies]
        else:
            candidates = [r.strip() for r in replies]
        cands: list[str] = []
        ref_list: list[str] = []
        for cand in candidates:
            if cand:
                cands.extend([cand] * len(refs))
                ref_list.extend(refs)
        flat = [min(1.0, max(0.0, float(s))) for s in scorer.score(cands, ref_list)] if cands else []
        if len(flat) != len(cands):
            raise RuntimeError(f"the {metric!r} metric returned {len(flat)} scores for {len(cands)} pairs")
        out: list[float] = []
        pos = 0
        for cand in candidates:
            if not cand:
                out.append(0.0)
                continue
            scores = flat[pos : pos + len(refs)]
            pos += len(refs)
            best_true = max(scores[: len(true_refs)])
            if false_refs:
                out.append(1.0 if best_true > max(scores[len(true_refs) :]) else 0.0)
            else:
                out.append(best_true)
        return out
