"""The headline ranking of a loaded run: conflict-aware scores, intervals, comparisons,
per-student missing data and the ranking on the items every student answered.

Glue between the integer-coded :class:`ScoreModel` and the array estimators of
:mod:`coeval_analysis.stats.headline` and :mod:`coeval_analysis.stats.comparisons`; what it
returns goes into ``summary.json`` as is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from coeval_analysis.loading.run_data import LLM_JUDGE, RunData
from coeval_analysis.ranking.factor_plan import FactorPlan, factor_plan
from coeval_analysis.ranking.families import model_families
from coeval_analysis.ranking.headline_parts import (
    Evidence,
    RateFactor,
    combine,
    evidence_columns,
    rate_factors,
)
from coeval_analysis.stats.bootstrap import Bootstrap, percentile_interval
from coeval_analysis.stats.comparisons import Comparisons, compare_students, rank_label
from coeval_analysis.stats.headline import Headline, Judgments
from coeval_analysis.stats.measurement import (
    TAU,
    Fit,
    Layout,
    Reference,
    Replicates,
    Scores,
    bootstrap,
    fit_all,
    info_share,
    layout_of,
    student_scores,
)
from coeval_analysis.stats.scores import ScoreModel, pair_mean
from coeval_analysis.stats.unit_scale import to_unit

__all__ = [
    "MISSING_GAP",
    "HeadlineRanking",
    "all_students",
    "common_items",
    "determination",
    "headline_ranking",
    "judgments_of",
    "rank_label",
    "reference_in_headline",
    "reference_of",
    "student_missing",
    "teacher_weights",
    "unrelated_share",
    "unrelated_weight",
]

#: failure rates of students differing by more than this share a warning and a common-items ranking
MISSING_GAP = 0.05
#: below this many datapoints no interval, p-value or rank range is shown ("too few datapoints")
MIN_INTERVAL_DATAPOINTS = 10
#: below this many, bootstrap intervals are widened to the t distribution's
WIDEN_BELOW = 30
#: a judge whose reliability (share of its score variance answer quality explains) is below
#: this barely tells answers apart
RELIABILITY_FLOOR = 0.05


@dataclass
class HeadlineRanking:
    """The headline: per student a score in [0, 1] with interval, comparisons and rank ranges."""

    headline: Headline  #: ``score`` is the headline; the judge and datapoint parts are the judged model's
    judges: list[str]  #: the LLM judges of the judged part
    families: dict[str, str]
    ci: tuple[np.ndarray, np.ndarray]
    reps: np.ndarray
    comparisons: Comparisons
    weight_ci: tuple[np.ndarray, np.ndarray]
    judgments: Judgments
    measurement: MeasurementSummary
    judged: np.ndarray  #: per student: the judged part, in [0, 1] (NaN: no judge scored it)
    evidence: list[Evidence]  #: the leaderboard's evidence columns
    combined: str  #: how the headline was combined, in one sentence
    #: whether the human labels move the headline (the fit with them against the fit without); None: no labels
    labels_move: bool | None = None


@dataclass
class MeasurementSummary:
    """The fitted measurement model behind the headline."""

    layout: Layout
    fit: Fit
    scores: Scores | None
    replicates: Replicates | None
    scale: np.ndarray  #: per LLM judge, on the reported scale (1: an average informative judge)
    n_items: int  #: datapoints the headline rests on
    intervals: bool  #: False: too few datapoints for any interval
    latent: np.ndarray  #: per student: the judged score on the model's own scale (may leave [0, 1])
    widened: np.ndarray  #: (n_boot, S) resamples of ``latent`` (widened for small runs)


def judgments_of(
    model: ScoreModel, families: dict[str, str], plan: FactorPlan | None = None
) -> tuple[Judgments, list[str]]:
    """(judgments, judge names): one row per (response, LLM judge), the judge's mean over the
    judged factors it scored, weighted by the rubric (``plan``; equal without one);
    conflicted when judge and student share a family. Checks, tests, metrics and gold are
    never judgments: they are plain rates (:mod:`coeval_analysis.ranking.headline_parts`)."""
    names = list(model.judges)
    if plan is None or not len(model.u_resp):
        pr, pj, pm = model.per_judge_response()
    else:
        pr, pj, pm = _weighted_judge_means(model, plan)
    item, student = model.resp_item[pr], model.resp_student[pr]
    ok = (item >= 0) & (student >= 0) & np.isfinite(pm)  # NaN: every factor of the answer weighs 0
    pr, pj, pm, item, student = pr[ok], pj[ok], pm[ok], item[ok], student[ok]
    fam_judge = np.array([families.get(n, n) for n in names] + [""], dtype=object)
    fam_student = np.array([families.get(s, s) for s in model.students] + ["\0"], dtype=object)
    conflicted = fam_judge[pj] == fam_student[student] if len(pj) else np.zeros(0, bool)
    j = Judgments(
        item=item.astype(np.int64),
        student=student.astype(np.int64),
        judge=pj.astype(np.int64),
        value=pm.astype(np.float64),
        conflicted=np.asarray(conflicted, bool),
        n_items=model.n_items,
        n_students=model.n_students,
        n_judges=len(names),
        item_teacher=model.item_teacher.astype(np.int64),
    )
    return j, names


def _weighted_judge_means(model: ScoreModel, plan: FactorPlan) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(response, judge, weighted mean over factors) of every (response, LLM judge) pair."""
    n_f = max(len(model.factors), 1)
    table = np.ones((max(len(model.tasks), 1), n_f))
    for f in plan.factors:
        if f.kind == "judged" and f.task in model.tasks and f.factor in model.factors:
            table[model.tasks.index(f.task), model.factors.index(f.factor)] = f.weight
    # a task whose judged factors all weigh 0 keeps its judged score for the leaderboard (equal
    # weights); it counts for nothing in the headline (FactorPlan.judged_total is 0)
    judged_cols = np.zeros(n_f, bool)
    judged_cols[[model.factors.index(f.factor) for f in plan.factors if f.kind == "judged" and f.factor in model.factors]] = True
    silent = ~(table[:, judged_cols] > 0).any(1) if judged_cols.any() else np.zeros(len(table), bool)
    table[silent] = 1.0
    item = model.resp_item[model.u_resp]
    task = np.where(item >= 0, model.item_task[np.maximum(item, 0)], -1)
    w = np.where(task >= 0, table[np.maximum(task, 0), model.u_factor], 1.0)
    if not (w != 1.0).any():
        return model.per_judge_response()
    r, j, num = pair_mean(model.u_resp, model.u_judge, len(model.judges), model.u_value * w)
    _, _, den = pair_mean(model.u_resp, model.u_judge, len(model.judges), w)
    return r, j, np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def reference_of(model: ScoreModel, table: pd.DataFrame | None) -> Reference | None:
    """The reference judge's scores (human labels of judged factors) in the model's codes:
    ``table`` has columns ``datapoint_id, student, factor, score`` (in [0, 1]) and ``source``;
    only ``human`` rows are a judge of the judged factors (gold and label accuracy are plain
    rates, :mod:`coeval_analysis.ranking.factor_plan`). Factors of one answer are averaged, as a
    judge's are. Rows naming a datapoint or student the run does not score are ignored."""
    if table is None or not len(table):
        return None
    missing = {"datapoint_id", "student", "factor", "score", "source"} - set(table.columns)
    if missing:
        raise ValueError(f"reference scores lack the column(s) {', '.join(sorted(missing))}")
    table = table[table["source"].astype(str) == "human"]
    if not len(table):
        return None
    ids = np.asarray(model.data.datapoint_ids, dtype=object)[model.items]
    item_of = {str(d): i for i, d in enumerate(ids)}
    student_of = {s: i for i, s in enumerate(model.students)}
    score = pd.to_numeric(table["score"], errors="coerce").to_numpy(np.float64)
    if np.any((score < 0) | (score > 1)):
        raise ValueError("reference scores must lie in [0, 1]")
    item = np.array([item_of.get(str(d), -1) for d in table["datapoint_id"]], np.int64)
    student = np.array([student_of.get(str(s), -1) for s in table["student"]], np.int64)
    ok = (item >= 0) & (student >= 0) & np.isfinite(score)
    if not ok.any():
        return None
    key = item[ok] * model.n_students + student[ok]
    uniq, inv = np.unique(key, return_inverse=True)
    mean = np.bincount(inv, score[ok]) / np.bincount(inv)
    return Reference(uniq // model.n_students, uniq % model.n_students, mean)


def _small_sample_widen(reps: np.ndarray, score: np.ndarray, n_items: int, level: float) -> np.ndarray:
    """Below ``WIDEN_BELOW`` datapoints a percentile interval is too narrow: stretch the
    replicates about the estimate by t(n - 1) / z and the n / (n - 1) variance correction."""
    if n_items >= WIDEN_BELOW or not len(reps):
        return reps
    from scipy.stats import norm  # half a second to import: only small runs need it
    from scipy.stats import t as student_t

    q = 0.5 + level / 2
    factor = float(student_t.ppf(q, n_items - 1) / norm.ppf(q) * np.sqrt(n_items / (n_items - 1)))
    out: np.ndarray = score[None, :] + factor * (reps - score[None, :])
    return out


def headline_ranking(
    model: ScoreModel, data: RunData, boot: Bootstrap, level: float, reference: pd.DataFrame | None = None
) -> HeadlineRanking:
    """The headline: the measurement model of :mod:`coeval_analysis.stats.measurement` on the
    judged factors (mapped onto [0, 1]), combined per task with the plain rates the rubric
    asks for (:mod:`coeval_analysis.ranking.headline_parts`), their shared bootstrap, comparisons and
    rank ranges. ``reference``: see :func:`reference_of`."""
    families = model_families(data.config, [*model.judges, *model.scorers, *model.students])
    plan = factor_plan(data)
    j, names = judgments_of(model, families, plan)
    m, h, wci = _measure(model, j, reference_of(model, reference), boot, level)
    judged = to_unit(h.score)
    judged_reps = to_unit(m.widened) if len(m.widened) else np.zeros((0, model.n_students))
    judged_ci = percentile_interval(judged_reps, level) if len(judged_reps) else _nan_pair(model.n_students)
    cells = ~np.isnan(h.cell) if h.cell.size else np.zeros((model.n_items, model.n_students), bool)
    rates = rate_factors(model, plan)
    n_rate_items = _rate_items(rates)
    enough = max(m.n_items, n_rate_items) >= MIN_INTERVAL_DATAPOINTS and bool(boot.n_boot)

    def widen(reps: np.ndarray, score: np.ndarray) -> np.ndarray:
        return _small_sample_widen(reps, score, max(m.n_items, n_rate_items), level)

    parts = combine(model, plan, rates, judged, judged_reps, cells, boot if enough else None, widen)
    enough = enough and len(parts.reps) > 0  # a part with too few datapoints of its own: no interval
    S = model.n_students
    reps = parts.reps if enough else np.zeros((0, S))
    ci = percentile_interval(reps, level) if len(reps) else _nan_pair(S)
    comp = compare_students(list(model.students), parts.score, reps, level)
    if not enough and boot.n_boot:  # too few datapoints: no place is known
        n_scored = int(np.isfinite(parts.score).sum())
        comp.rank_range = [(1, n_scored) if np.isfinite(parts.score[i]) else None for i in range(S)]
        comp.rank_ci = list(comp.rank_range)
    m.intervals = enough
    m.n_items = parts.n_items
    judged_n = cells.sum(0).astype(np.int64)
    evidence = evidence_columns(parts.rates, judged if len(model.judges) else None, judged_ci, judged_n,
                                boot if enough else None, level,
                                any(plan.judged_total(t) > 0 for t in plan.tasks()))  # fmt: skip
    moved = _labels_move(model, plan, rates, j, parts.score, widen) if m.layout.has_reference else None
    h.score = parts.score
    return HeadlineRanking(h, names, families, ci, reps, comp, wci, j, m, judged, evidence, parts.sentence, moved)


#: a headline score that changes by at least this much (it shows at three decimals) has moved
MOVED = 0.0005


def _labels_move(model: ScoreModel, plan: FactorPlan, rates: list[RateFactor], j: Judgments,
                 with_labels: np.ndarray, widen: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> bool:  # fmt: skip
    """Whether the human labels move the headline: the fit without them, compared."""
    lay = layout_of(j, None)
    S = model.n_students
    if lay.K == 0 or not lay.seen.any():
        judged, cells = np.full(S, np.nan), np.zeros((model.n_items, S), bool)
    else:
        sc = student_scores(lay, fit_all(lay)[0])
        judged, cells = to_unit(sc.score), ~np.isnan(sc.cell)
    without = combine(model, plan, rates, judged, np.zeros((0, S)), cells, None, widen).score
    both = np.isfinite(without) & np.isfinite(with_labels)
    return bool((np.abs(without[both] - with_labels[both]) >= MOVED).any() or (both != np.isfinite(with_labels)).any())


def _nan_pair(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.full(n, np.nan), np.full(n, np.nan)


def _rate_items(rates: list[RateFactor]) -> int:
    """Datapoints with a plain rate that counts in the headline."""
    counted = [r.items[(r.den > 0).any(1)] for r in rates if r.factor.in_headline]
    return len(np.unique(np.concatenate(counted))) if counted else 0


def _measure(
    model: ScoreModel, j: Judgments, ref: Reference | None, boot: Bootstrap, level: float
) -> tuple[MeasurementSummary, Headline, tuple[np.ndarray, np.ndarray]]:
    """The measurement model of the judged factors: its fit, scores on its own (latent)
    scale, bootstrap and judge parameters."""
    lay = layout_of(j, ref)
    S, k = model.n_students, j.n_judges
    if lay.K == 0 or not lay.seen.any():
        f = Fit(np.zeros(lay.K), np.zeros(lay.K), np.ones(lay.K), np.zeros(lay.K), np.zeros(lay.K),
                np.zeros(lay.K), np.zeros(lay.K), np.zeros(model.n_items), 0.01, True, 0, np.zeros(lay.K))  # fmt: skip
        sub, share = lay, 1.0
        sc = student_scores(lay, f) if lay.K else None
    else:
        f, sub, share = fit_all(lay)
        sc = student_scores(lay, f)
    score = sc.score if sc is not None else np.full(S, np.nan)
    n_items = int(((sc.den > 0).any(1)).sum()) if sc is not None else 0
    enough = n_items >= MIN_INTERVAL_DATAPOINTS
    widened = np.zeros((0, S))
    refits: Replicates | None = None
    if sc is not None and boot.n_boot and enough:
        refits = bootstrap(lay, f, sc, sub, share, list(boot.weights()), boot.seed)
        widened = _small_sample_widen(refits.score, score, n_items, level)
    share_info, scale = (np.zeros(lay.K), np.zeros(lay.K))
    if lay.K:
        stretch = sc.stretch if sc is not None else 1.0
        share_info, scale = info_share(lay, f, stretch)
    if refits is not None and refits.n_refits >= MIN_INTERVAL_DATAPOINTS:
        wlo, whi = percentile_interval(refits.judge_info[:, :k], level)
    else:
        wlo, whi = np.full(k, np.nan), np.full(k, np.nan)
    n_conf = np.bincount(j.judge[j.conflicted].astype(np.int64), minlength=k)[:k]
    stretch, shift = (sc.stretch, sc.shift) if sc is not None else (1.0, 0.0)
    rel = f.reliability[:k] if lay.K else np.zeros(0)
    h = Headline(
        judge_weight=share_info[:k],
        judge_leniency=(f.location[:k] - shift * f.scale[:k] / stretch) if lay.K else np.zeros(0),
        # the signed root of the reliability; undefined (NaN) for a judge whose scale could
        # not be measured (no judge checks it, or it gives one level)
        judge_r=np.where(scale[:k] != 0, np.sign(f.scale[:k]) * np.sqrt(np.clip(rel, 0, 1)), np.nan)
        if lay.K
        else np.zeros(0),
        judge_n=f.n_fit[:k] if len(f.n_fit) else np.zeros(k),
        converged=f.converged,
        iterations=f.iterations,
        item_weight=sc.item_weight if sc is not None and len(sc.item_weight) else np.ones(model.n_items),
        item_discrimination=np.full(model.n_items, np.nan),
        cell=sc.cell if sc is not None else np.full((model.n_items, S), np.nan),
        grand=(stretch * sc.grand + shift) if sc is not None else float("nan"),
        score=score,
        n_conflicted=n_conf.astype(np.int64),
    )
    m = MeasurementSummary(lay, f, sc, refits, scale[:k], n_items, enough, score, widened)
    return m, h, (wlo, whi)


def reference_in_headline(r: HeadlineRanking) -> bool | None:
    """Whether the human labels move the headline: the fit with them gives other scores than
    the fit without them. None without labels. Labels the fit cannot check (too few of them
    on the same datapoints, or agreeing with the judges no better than chance) move nothing;
    a user who labelled should be told."""
    return r.labels_move


def unrelated_weight(r: HeadlineRanking) -> np.ndarray:
    """Per student: the share of its headline information that comes from judges unrelated
    to it that tell answers apart (reliability at least ``RELIABILITY_FLOOR``). Low: its
    place rests on related judges, whose family bias is bounded only by the prior, or on
    judges that barely tell answers apart."""
    return unrelated_share(r.measurement.layout, r.measurement.fit)


def unrelated_share(lay: Layout, f: Fit) -> np.ndarray:
    """:func:`unrelated_weight` from the fitted model's layout and parameters alone."""
    S = lay.n_students
    if lay.K == 0 or not lay.seen.any():
        return np.zeros(S)
    h = lay.seen * (f.scale**2 / f.noise)
    good = lay.seen & ~lay.conflicted & (f.reliability >= RELIABILITY_FLOOR)[None, :]
    tot = np.bincount(lay.cell_student, h.sum(1), S)
    mine = np.bincount(lay.cell_student, (h * good).sum(1), S)
    out: np.ndarray = np.where(tot > 0, mine / np.where(tot > 0, tot, 1.0), 0.0)
    return out


#: a student whose information from unrelated judges that tell answers apart is below this
#: share, and whose rank range is wider than one place, is "not determined"
UNRELATED_INFO_FLOOR = 0.25


def determination(r: HeadlineRanking) -> list[str | None]:
    """Per student: None when its place is determined (or it is unscored), else why not, in
    words a user can act on."""
    m = r.measurement
    scored = np.isfinite(r.headline.score)
    if not m.intervals:
        why = (f"too few datapoints ({m.n_items}, fewer than {MIN_INTERVAL_DATAPOINTS}) for an interval "
               "or a rank; add datapoints")  # fmt: skip
        return [why if scored[i] else None for i in range(len(scored))]
    unrelated = unrelated_weight(r)
    judged = np.isfinite(r.judged) if len(r.judged) == len(scored) else np.zeros(len(scored), bool)
    out: list[str | None] = []
    for i, rr in enumerate(r.comparisons.rank_range):
        # a place resting on pass rates alone is a matter of datapoints, which the rank range shows
        if not scored[i] or not judged[i] or rr is None or rr[0] == rr[1] or unrelated[i] >= UNRELATED_INFO_FLOOR:
            out.append(None)
            continue
        out.append(
            "no unrelated judge that tells answers apart graded it (they hold "
            f"{unrelated[i]:.0%} of its information): its place rests on judges of its family, whose "
            f"bias is bounded only by a prior of +/-{TAU:.2f}, or on judges that barely tell answers apart; "
            "add an unrelated judge, or label a few answers"
        )
    return out


def teacher_weights(r: HeadlineRanking, teachers: list[str]) -> dict[str, float | None]:
    """Mean headline datapoint weight of each teacher's datapoints (how much its datapoints
    count in the headline score; low for datapoints unrelated to student quality)."""
    j, d = r.judgments, r.headline.item_weight
    out: dict[str, float | None] = {}
    for t, name in enumerate(teachers):
        mine = j.item_teacher == t
        out[name] = float(d[mine].mean()) if mine.any() else None
    return out


def all_students(data: RunData, model: ScoreModel) -> list[str]:
    """Every student of the run: scored ones, and those whose every answer failed or went
    unjudged (from phase 4 and the judge records)."""
    names = set(model.students)
    for table in (data.responses, data.records):
        if len(table) and "student" in table.columns:
            names.update(str(x) for x in table["student"].dropna().unique())
    return sorted(names)


def student_missing(data: RunData, model: ScoreModel, students: list[str]) -> dict[str, dict[str, Any]]:
    """Per student: answers, failed answers (phase 4), answers without a usable score
    (every judge record failed or none), the shares, and the LLM-judge records of the
    student's answers with how many failed (a judge failure another judge made up for
    leaves the answer scored, so only this count shows it)."""
    resp = data.responses
    scored = np.zeros(model.n_responses, bool)
    scored[model.scored_responses()] = True
    out: dict[str, dict[str, Any]] = {}
    rec = data.records
    if len(resp):
        codes = resp.index.to_numpy()
        who = resp["student"].astype(str).to_numpy()
        failed = resp["failed"].to_numpy().astype(bool)
    else:  # no phase-4 files (some legacy runs): the answers judges saw
        uniq = rec.drop_duplicates("response")
        codes = uniq["response"].to_numpy()
        who = uniq["student"].astype(str).to_numpy()
        failed = np.zeros(len(codes), bool)
    codes = np.asarray(codes, np.int64)
    known = (codes >= 0) & (codes < len(scored))
    has_score = np.zeros(len(codes), bool)
    has_score[known] = scored[codes[known]]
    judged = rec[(rec["evaluator"] == LLM_JUDGE).to_numpy() & ~rec["orphaned"].to_numpy()] if len(rec) else rec
    judge_who = judged["student"].astype(str).to_numpy() if len(judged) else np.zeros(0, str)
    judge_failed = judged["failed"].to_numpy().astype(bool) if len(judged) else np.zeros(0, bool)
    for s in students:
        mine = who == s
        n = int(mine.sum())
        n_failed = int((mine & failed).sum())
        n_unjudged = int((mine & ~failed & ~has_score).sum())
        out[s] = {
            "n_answers": n,
            "n_failed": n_failed,
            "n_unjudged": n_unjudged,
            # judge records of this student's answers, and how many of them failed
            "n_judgments": int((judge_who == s).sum()),
            "n_judgments_failed": int(((judge_who == s) & judge_failed).sum()),
            "failure_rate": n_failed / n if n else None,
            "missing_rate": (n_failed + n_unjudged) / n if n else None,
        }
    return out


def common_items(r: HeadlineRanking, students: list[str]) -> dict[str, Any]:
    """The judged score (on [0, 1], as the headline's) on the datapoints every scored student
    has a judged score on."""
    h = r.headline
    has = ~np.isnan(h.cell)
    scored = has.any(0)
    common = has[:, scored].all(1) if scored.any() else np.zeros(has.shape[0], bool)
    sub = np.where(common[:, None], h.cell, np.nan)
    mu = np.nanmean(sub[common], 1) if common.any() else np.zeros(0)
    dev = sub[common] - mu[:, None]
    d = h.item_weight[common][:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        tot = (~np.isnan(dev) * d).sum(0)
        score = np.where(tot > 0, h.grand + np.nansum(dev * d, 0) / np.where(tot > 0, tot, 1.0), np.nan)
    score = to_unit(score)
    order = np.argsort(-np.where(np.isnan(score), -np.inf, score), kind="stable")
    ranks = np.empty(len(score), np.int64)
    ranks[order] = np.arange(1, len(score) + 1)
    return {
        "n_items": int(common.sum()),
        "students": {
            s: {"score": float(score[i]) if np.isfinite(score[i]) else None,
                "rank": int(ranks[i]) if np.isfinite(score[i]) else None}
            for i, s in enumerate(students)
        },
    }  # fmt: skip

