"""What each rubric factor of a run is, and what it counts for in the headline.

Judges' factors are *judged*: they go through the measurement model, which gives judges a
scale, a leniency and a weight. Everything else is a plain rate measured without a judge,
kept in its own unit: deterministic checks, code tests (pass@1), label accuracy, a
reference metric the rubric names (``{metric: bleu}``), a plugin evaluator's score, and
benchmark gold. A factor counts in the headline only when the task asks for it: the rubric
names it (judged factors, checks, metrics, plugin evaluators, ``gold``), the task declares
it a label attribute, or the task runs code tests. Gold the data merely carries (a
``reference`` column scored by BLEU, a benchmark's answer key) is reported beside the
ranking, not inside it.

Each factor has a weight (``rubric: {factor: {weight: 2, ...}}``, default 1); a student's
task score is the weighted mean of its factors, the headline the mean over tasks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from coeval.answer_checks.functions import CHECK_NAMES

from coeval_analysis.loading.run_data import LLM_JUDGE, RunData

__all__ = ["CODE_TESTS", "FactorKind", "FactorPlan", "PlannedFactor", "factor_plan", "factor_weight", "kind_of"]

FactorKind = Literal["judged", "checks", "pass@1", "labels", "metric", "gold", "other"]
#: the evaluator that runs an answer's code against its tests
CODE_TESTS = "python_tests"
_GOLD = "gold"


@dataclass(frozen=True)
class PlannedFactor:
    task: str
    factor: str
    evaluator: str
    kind: FactorKind
    weight: float
    in_headline: bool  #: False: reported beside the ranking (the task did not ask for it)


@dataclass
class FactorPlan:
    """Every (task, evaluator, factor) the run scored, with its kind, weight and role."""

    factors: list[PlannedFactor] = field(default_factory=list)

    def judged_weight(self, task: str, factor: str) -> float:
        """The weight of a judged factor within its judges' score of an answer (1 unknown)."""
        for f in self.factors:
            if f.kind == "judged" and f.task == task and f.factor == factor:
                return f.weight
        return 1.0

    def judged_total(self, task: str) -> float:
        """The weight of a task's judged factors together (0: the task has none)."""
        return sum(f.weight for f in self.factors if f.kind == "judged" and f.task == task and f.in_headline)

    def rates(self) -> list[PlannedFactor]:
        """The factors that are plain rates (everything not judged), in the headline or beside it."""
        return [f for f in self.factors if f.kind != "judged"]

    def tasks(self) -> list[str]:
        return sorted({f.task for f in self.factors})


def kind_of(evaluator: str) -> FactorKind:
    """What kind of evidence an evaluator's scores are."""
    if evaluator == LLM_JUDGE:
        return "judged"
    if evaluator in CHECK_NAMES:
        return "checks"
    if evaluator == CODE_TESTS:
        return "pass@1"
    if evaluator == "label":
        return "labels"
    if evaluator == "metric":
        return "metric"
    if evaluator == _GOLD:
        return "gold"
    return "other"


def factor_weight(spec: Any) -> float:
    """A rubric factor's declared weight (1 when it declares none)."""
    if isinstance(spec, Mapping) and isinstance(spec.get("weight"), int | float) and not isinstance(
        spec.get("weight"), bool
    ):
        return float(spec["weight"])
    return 1.0


def _asked(kind: FactorKind, factor: str, rubric: Mapping[str, Any], labels: list[str]) -> bool:
    if kind == "pass@1":  # code tests run only where the task or its datapoints ask for them
        return True
    if kind == "labels":
        return factor in labels or factor in rubric
    return kind == "judged" or factor in rubric


def factor_plan(data: RunData) -> FactorPlan:
    """The plan of ``data``: one entry per (task, evaluator, factor) its scores have."""
    units = data.units
    plan = FactorPlan()
    if units.empty:
        return plan
    # distinct on the categorical codes first: a large run has millions of scores and a few factors
    seen = units[["task", "evaluator", "factor"]].drop_duplicates().astype(str).sort_values(["task", "factor"])
    for task, evaluator, factor in seen.itertuples(index=False):
        rubric = data.rubrics.get(task) or {}
        kind = kind_of(evaluator)
        labels = list(data.label_attributes.get(task, []))
        weight = factor_weight(rubric.get(factor))
        plan.factors.append(PlannedFactor(task, factor, evaluator, kind, weight, _asked(kind, factor, rubric, labels)))
    return plan
