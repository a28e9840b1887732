"""The headline from its parts: the judged score and the plain rates, combined per task
with the rubric's weights, then averaged over tasks.

The judged part is the measurement model's score of the judged factors, mapped onto
[0, 1] (:func:`coeval_analysis.stats.unit_scale.to_unit`). Each rate (a check's pass rate,
pass@1, label accuracy, a metric the rubric names) is the mean over a student's datapoints
of its per-datapoint mean. Both parts are recomputed on the same datapoint resamples (the
judged part's come from the model's own bootstrap, on the same resamples), so the
headline's intervals and rank ranges carry the uncertainty of each part and how they move
together.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from coeval_analysis.ranking.factor_plan import FactorKind, FactorPlan, PlannedFactor
from coeval_analysis.stats.bootstrap import Bootstrap, percentile_interval
from coeval_analysis.stats.scores import ScoreModel

__all__ = ["Evidence", "HeadlineParts", "RateFactor", "combine", "rate_factors"]

Widen = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass
class RateFactor:
    """One plain-rate factor of one task, per (datapoint, student)."""

    factor: PlannedFactor
    items: np.ndarray  #: the model's item indices of its datapoints
    num: np.ndarray  #: (len(items), S) per-datapoint mean value (0 where none)
    den: np.ndarray  #: (len(items), S) 1 where the student has a value on the datapoint

    @property
    def score(self) -> np.ndarray:
        n = self.den.sum(0)
        with np.errstate(invalid="ignore", divide="ignore"):
            out: np.ndarray = np.where(n > 0, self.num.sum(0) / np.where(n > 0, n, 1), np.nan)
        return out


@dataclass
class Evidence:
    """One kind of evidence, pooled over its factors and tasks: a leaderboard column."""

    key: str
    kind: str
    title: str
    in_headline: bool
    score: np.ndarray  #: (S,)
    low: np.ndarray
    high: np.ndarray
    n: np.ndarray  #: (S,) datapoints behind each score


@dataclass
class HeadlineParts:
    score: np.ndarray  #: (S,) the headline, in [0, 1]
    reps: np.ndarray  #: (n_boot, S) its resamples (empty: no interval)
    n_items: int  #: datapoints with evidence that counts in the headline
    rates: list[RateFactor]
    sentence: str  #: how the headline was combined, in one sentence


def rate_factors(model: ScoreModel, plan: FactorPlan) -> list[RateFactor]:
    """Every plain-rate factor of the run (in the headline or beside it)."""
    units = model.data.units
    if units.empty or not plan.rates():
        return []
    task = units["task"].astype(str).to_numpy()
    evaluator = units["evaluator"].astype(str).to_numpy()
    factor = units["factor"].astype(str).to_numpy()
    student_of = {s: i for i, s in enumerate(model.students)}
    student = np.array([student_of.get(s, -1) for s in units["student"].astype(str)], np.int64)
    dp = units["datapoint"].to_numpy().astype(np.int64)
    pos = np.searchsorted(model.items, dp)
    pos = np.minimum(pos, max(len(model.items) - 1, 0))
    known = (len(model.items) > 0) & (model.items[pos] == dp) & (student >= 0)
    value = units["value"].to_numpy().astype(np.float64)
    S = model.n_students
    out = []
    for pf in plan.rates():
        sel = known & (task == pf.task) & (evaluator == pf.evaluator) & (factor == pf.factor)
        if not sel.any():
            continue
        items, inv = np.unique(pos[sel], return_inverse=True)
        flat = inv * S + student[sel]
        count = np.bincount(flat, minlength=len(items) * S).reshape(len(items), S)
        total = np.bincount(flat, value[sel], minlength=len(items) * S).reshape(len(items), S)
        den = (count > 0).astype(np.float64)
        num = np.where(count > 0, total / np.maximum(count, 1), 0.0)
        out.append(RateFactor(pf, items.astype(np.int64), num, den))
    return out


def _task_codes(model: ScoreModel, tasks: list[str]) -> np.ndarray:
    index = {t: k for k, t in enumerate(tasks)}
    return np.array([index.get(model.tasks[t], -1) if t >= 0 else -1 for t in model.item_task], np.int64)


def combine(
    model: ScoreModel,
    plan: FactorPlan,
    rates: list[RateFactor],
    judged: np.ndarray,
    judged_reps: np.ndarray,
    judged_cells: np.ndarray,
    boot: Bootstrap | None,
    widen: Widen,
) -> HeadlineParts:
    """The headline of every student from its judged score (``judged``, in [0, 1], with
    ``judged_reps`` on ``boot``'s resamples) and the run's rates.

    ``judged_cells``: (items, S) True where the student has a judged score on the item, to
    know which tasks its judged part covers. ``boot`` None: no resamples (too few
    datapoints); a judged part without resamples of its own gives none either.
    ``widen(reps, score)`` stretches a part's resamples for small runs."""
    S = model.n_students
    tasks = plan.tasks()
    counted = [r for r in rates if r.factor.in_headline]
    item_task = _task_codes(model, tasks)
    B = boot.n_boot if boot is not None else 0
    if B and judged_reps.shape[0] != B and any(plan.judged_total(t) > 0 for t in tasks) and np.isfinite(judged).any():
        # too few judged datapoints for the model's own resamples: the judged part's uncertainty
        # is unknown, and holding it fixed would call its differences certain; no interval
        B = 0
    rate_reps = boot.ratios([(r.items, r.num, r.den) for r in counted]) if boot is not None and B and counted else []
    num = np.zeros((len(tasks), S))
    den = np.zeros((len(tasks), S))
    num_b = np.zeros((B, len(tasks), S))
    den_b = np.zeros((B, len(tasks), S))
    if judged_reps.shape[0] != B:  # no judged part in the headline: its resamples are never read
        judged_reps = np.broadcast_to(judged, (B, S))
    for k, task in enumerate(tasks):
        w = plan.judged_total(task)
        mine = item_task == k
        has = judged_cells[mine].any(0) & np.isfinite(judged) if mine.any() else np.zeros(S, bool)
        if w > 0 and has.any():
            num[k] += np.where(has, w * np.nan_to_num(judged), 0.0)
            den[k] += np.where(has, w, 0.0)
            if B:
                ok = has[None, :] & np.isfinite(judged_reps)
                num_b[:, k] += np.where(ok, w * np.nan_to_num(judged_reps), 0.0)
                den_b[:, k] += np.where(ok, w, 0.0)
    for idx, r in enumerate(counted):
        k = tasks.index(r.factor.task)
        w, score = r.factor.weight, r.score
        ok = np.isfinite(score)
        num[k] += np.where(ok, w * np.nan_to_num(score), 0.0)
        den[k] += np.where(ok, w, 0.0)
        if B:
            reps = np.clip(widen(rate_reps[idx], score), 0.0, 1.0)
            okb = np.isfinite(reps)
            num_b[:, k] += np.where(okb, w * np.nan_to_num(reps), 0.0)
            den_b[:, k] += np.where(okb, w, 0.0)
    score = _mean_over_tasks(num, den)
    reps = _mean_over_tasks(num_b, den_b) if B else np.zeros((0, S))
    if B:
        reps[:, ~np.isfinite(score)] = np.nan
    covered = np.asarray(judged_cells.any(1) if judged_cells.size else np.zeros(model.n_items, bool), bool)
    for r in counted:
        covered[r.items[(r.den > 0).any(1)]] = True
    return HeadlineParts(score, reps, int(covered.sum()), rates, combined_sentence(plan, rates))


def _mean_over_tasks(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Per student (and resample): the mean over tasks of each task's weighted mean."""
    with np.errstate(invalid="ignore", divide="ignore"):
        task_score = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
        n_tasks = (den > 0).sum(-2)
        total = np.nansum(task_score, axis=-2)
        out: np.ndarray = np.where(n_tasks > 0, total / np.maximum(n_tasks, 1), np.nan)
    return out


_NAMES: dict[FactorKind, str] = {
    "judged": "judged factors",
    "checks": "check",
    "pass@1": "tests passed (pass@1)",
    "labels": "label accuracy",
    "metric": "metric",
    "gold": "gold",
    "other": "score",
}


def _task_sentence(plan: FactorPlan, task: str, rates: list[RateFactor]) -> str:
    parts: list[tuple[str, float]] = []
    judged = plan.judged_total(task)
    if judged > 0:
        parts.append((_NAMES["judged"], judged))
    for r in rates:
        f = r.factor
        if f.task == task and f.in_headline:
            name = _NAMES[f.kind] if f.kind == "pass@1" else f"{_NAMES[f.kind]} {f.factor}"
            parts.append((name, f.weight))
    total = sum(w for _, w in parts)
    if not parts:
        return ""
    if len(parts) == 1:
        return parts[0][0]
    return ", ".join(f"{name} {w / total:.0%}" for name, w in parts)


def combined_sentence(plan: FactorPlan, rates: list[RateFactor]) -> str:
    """How the headline was combined, in one sentence."""
    tasks = [t for t in plan.tasks() if _task_sentence(plan, t, rates)]
    beside = sorted({r.factor.factor if r.factor.factor == r.factor.kind else f"{r.factor.factor} ({r.factor.kind})"
                     for r in rates if not r.factor.in_headline})  # fmt: skip
    tail = f"; {', '.join(beside)} shown beside it, not counted" if beside else ""
    if not tasks:
        return "No evidence counts in the headline" + tail + "."
    if len(tasks) == 1 and _task_sentence(plan, tasks[0], rates) == _NAMES["judged"]:
        return f"Headline = the judges' scores through the measurement model{tail}."
    if len(tasks) == 1:
        return f"Headline = {_task_sentence(plan, tasks[0], rates)}{tail}."
    said = {_task_sentence(plan, t, rates) for t in tasks}
    if said == {_NAMES["judged"]}:
        return f"Headline = the judges' scores through the measurement model, every task alike{tail}."
    if len(said) == 1:
        return f"Headline = {said.pop()} in each of the {len(tasks)} tasks, averaged over them{tail}."
    each = "; ".join(f"{t}: {_task_sentence(plan, t, rates)}" for t in tasks)
    return f"Headline = the mean over {len(tasks)} tasks of each task's weighted factors ({each}){tail}."


def evidence_columns(
    rates: list[RateFactor],
    judged: np.ndarray | None,
    judged_ci: tuple[np.ndarray, np.ndarray],
    judged_n: np.ndarray,
    boot: Bootstrap | None,
    level: float,
    judged_counts: bool = True,
) -> list[Evidence]:
    """The leaderboard's evidence columns: the judged score, then each kind of rate pooled
    over its factors and tasks (mean over datapoints of the factors' per-datapoint mean),
    with a percentile interval over the same datapoint resamples."""
    out: list[Evidence] = []
    if judged is not None and np.isfinite(judged).any():
        out.append(Evidence("judged", "judged", "judged", judged_counts, judged, judged_ci[0], judged_ci[1], judged_n))
    kinds: dict[str, list[RateFactor]] = {}
    for r in rates:
        kinds.setdefault(r.factor.kind, []).append(r)
    order: list[FactorKind] = ["checks", "pass@1", "labels", "metric", "other", "gold"]
    for kind in order:
        group = kinds.get(kind)
        if not group:
            continue
        items = np.unique(np.concatenate([r.items for r in group]))
        S = group[0].num.shape[1]
        num, den = np.zeros((len(items), S)), np.zeros((len(items), S))
        for r in group:
            at = np.searchsorted(items, r.items)
            num[at] += r.num
            den[at] += r.den
        has = den > 0
        per_dp = np.where(has, num / np.where(has, den, 1.0), 0.0)
        weight = has.astype(np.float64)
        n = weight.sum(0)
        with np.errstate(invalid="ignore", divide="ignore"):
            score = np.where(n > 0, per_dp.sum(0) / np.where(n > 0, n, 1), np.nan)
        lo, hi = np.full(S, np.nan), np.full(S, np.nan)
        if boot is not None and boot.n_boot:
            lo, hi = percentile_interval(boot.ratios([(items, per_dp, weight)])[0], level)
        title = "checks" if kind == "checks" else str(kind)
        in_headline = any(r.factor.in_headline for r in group)
        out.append(Evidence(title, kind, title, in_headline, score, lo, hi, n.astype(np.int64)))
    return out
