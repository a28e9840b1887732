"""``metric``: rubric factors scored by a reference-based metric, no judge call.

A rubric factor written as ``{metric: bleu, description: ...}`` is scored by the metric
registered under that name (``register_metrics``; coeval-analysis ships bleu, bertscore and
exact_match), comparing each student answer with the datapoint's reference answer. Scores
are in [0, 1]. All of a datapoint's answers go to the metric in one call, so metrics that
run a model (BERTScore) batch them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from coeval.config.model import TaskConfig
from coeval.evaluators.base import ModelFreeEvaluator, Scoring
from coeval.record_schema import METRICS, REFERENCE_RESPONSE, RESPONSE

__all__ = ["MetricEvaluator", "MissingMetricError", "metric_factors"]


class MissingMetricError(LookupError):
    pass


def metric_factors(rubric: Mapping[str, Any]) -> dict[str, str]:
    """factor -> metric name, for the rubric factors scored by a metric."""
    out = {}
    for factor, spec in rubric.items():
        if isinstance(spec, Mapping) and isinstance(spec.get("metric"), str) and spec["metric"]:
            out[str(factor)] = spec["metric"]
    return out


class MetricEvaluator(ModelFreeEvaluator):
    name = "metric"
    kind = "metric"

    def __init__(self, metrics: Callable[[], Any] | None = None) -> None:
        # ``metrics()`` returns the metric registry; looked up late so plugins are loaded
        self._metrics = metrics
        self._instances: dict[str, Any] = {}

    def bind_registries(self, registries: Any) -> None:
        """Called once the plugins' registries are filled: metrics come from the same set."""
        if self._metrics is None:
            self._metrics = lambda: registries.metrics

    def _registry(self) -> Any:
        if self._metrics is None:
            raise MissingMetricError("the metric evaluator was used before the plugins' registries were bound")
        return self._metrics()

    def metric(self, name: str) -> Any:
        if name not in self._instances:
            registry = self._registry()
            if name not in registry:
                known = ", ".join(sorted(registry.names())) or "none installed"
                raise MissingMetricError(
                    f"rubric metric {name!r} is not registered (known: {known}); "
                    "pip install coeval-analysis for bleu, bertscore and exact_match"
                )
            self._instances[name] = registry.get(name)()
        return self._instances[name]

    def applies(self, task: TaskConfig, rubric: Mapping[str, Any]) -> bool:
        """Whether the rubric names a metric (else no datapoint of the task has factors here)."""
        return bool(metric_factors(rubric))

    def factors(self, task: TaskConfig, rubric: Mapping[str, Any], datapoint: Mapping[str, Any]) -> list[str]:
        ref = datapoint.get(REFERENCE_RESPONSE)
        if not isinstance(ref, str):
            return []
        return list(metric_factors(rubric))

    def score(
        self,
        task: TaskConfig,
        rubric: Mapping[str, Any],
        datapoint: Mapping[str, Any],
        responses: list[Mapping[str, Any]],
    ) -> list[dict[str, float]]:
        reference = str(datapoint.get(REFERENCE_RESPONSE) or "")
        answers = [str(r.get(RESPONSE) or "") for r in responses]
        out: list[dict[str, float]] = [{} for _ in responses]
        for factor, name in metric_factors(rubric).items():
            values = self.metric(name).score(answers, [reference] * len(answers))
            for i, v in enumerate(values):
                value = float(v)
                if not 0.0 <= value <= 1.0:
                    raise ValueError(f"metric {name!r} returned {value}, outside [0, 1]")
                out[i][factor] = round(value, 6)
        return out

    def record_fields(self, scoring: Scoring, scores: Mapping[str, float]) -> dict[str, Any]:
        """``metrics``: factor -> the metric that scored it."""
        return {METRICS: {f: m for f, m in metric_factors(scoring.rubric).items() if f in scores}}
