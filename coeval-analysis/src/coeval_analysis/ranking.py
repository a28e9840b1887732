"""The headline ranking of a loaded run: conflict-aware scores, intervals, comparisons,
per-student missing data and the ranking on the items every student answered.

Glue between the integer-coded :class:`ScoreModel` and the array estimators of
:mod:`coeval_analysis.stats.headline` and :mod:`coeval_analysis.stats.comparisons`; what it
returns goes into ``summary.json`` as is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from coeval_analysis.data import LLM_JUDGE, RunData
from coeval_analysis.families import model_families
from coeval_analysis.stats._correlation import correlation_from_moments
from coeval_analysis.stats.bootstrap import Bootstrap, percentile_interval
from coeval_analysis.stats.comparisons import Comparisons, compare_students, rank_label
from coeval_analysis.stats.headline import (
    CORR_SHRINK,
    Headline,
    Judgments,
    snr_weight,
    fit_headline,
    shrinkage,
    weighted_judge_consensus,
)
from coeval_analysis.stats.scores import ScoreModel, pair_mean

__all__ = [
    "MISSING_GAP",
    "ConflictAwareRanking",
    "all_students",
    "common_items",
    "conflict_aware_ranking",
    "judgments_of",
    "rank_label",
    "student_missing",
    "teacher_weights",
    "unrelated_weight",
]

#: failure rates of students differing by more than this share a warning and a common-items ranking
MISSING_GAP = 0.05


@dataclass
class ConflictAwareRanking:
    headline: Headline
    judges: list[str]  #: scorers the headline used (LLM judges; metric scorers when none)
    families: dict[str, str]
    ci: tuple[np.ndarray, np.ndarray]
    reps: np.ndarray
    comparisons: Comparisons
    weight_ci: tuple[np.ndarray, np.ndarray]
    judgments: Judgments


def judgments_of(model: ScoreModel, families: dict[str, str]) -> tuple[Judgments, list[str]]:
    """(judgments, scorer names): one row per (response, judge), the judge's mean over the
    factors it scored; conflicted when judge and student share a family."""
    if len(model.judges):
        pr, pj, pm = model.per_judge_response()
        names = list(model.judges)
    else:  # no LLM judge: the metric / label scorers stand in (never conflicted)
        pr, pj, pm = pair_mean(model.x_resp, model.x_scorer, len(model.scorers), model.x_value)
        names = list(model.scorers)
    item, student = model.resp_item[pr], model.resp_student[pr]
    ok = (item >= 0) & (student >= 0)
    pr, pj, pm, item, student = pr[ok], pj[ok], pm[ok], item[ok], student[ok]
    fam_judge = np.array([families.get(n, n) for n in names] + [""], dtype=object)
    fam_student = np.array([families.get(s, s) for s in model.students] + ["\0"], dtype=object)
    conflicted = (
        (fam_judge[pj] == fam_student[student]) if len(model.judges) else np.zeros(len(pr), bool)
    )
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


def _weight_ci(
    h: Headline, j: Judgments, boot: Bootstrap, level: float
) -> tuple[np.ndarray, np.ndarray]:
    """Judge-weight intervals: resample datapoints, recompute each judge's correlation with
    the fixed leave-one-out consensus from resampled moment sums, then the weights."""
    k = j.n_judges
    keep = ~j.conflicted & ~np.isnan(j.value)
    if k < 2 or not keep.any() or boot.n_boot == 0:
        return np.full(k, np.nan), np.full(k, np.nan)
    S = j.n_students
    cell = j.item[keep] * S + j.student[keep]
    judge, value, item = j.judge[keep], j.value[keep], j.item[keep]
    w, b = h.judge_weight, h.judge_leniency
    num, den = weighted_judge_consensus(cell, judge, value, w, b, j.n_items * S)
    wj = w[judge]
    rest = den[cell] - wj
    ok = rest > 1e-12
    loo = np.where(ok, (num[cell] - wj * (value - b[judge])) / np.where(ok, rest, 1.0), 0.0)
    x = np.where(ok, value, 0.0)
    one = ok.astype(np.float64)
    cols = []
    for jdx in range(k):
        mine = judge == jdx
        for v in (one, x, loo * one, x * x, loo * loo * one, x * loo * one):
            cols.append(np.bincount(item[mine], weights=v[mine], minlength=j.n_items))
    sums = boot.sums(np.stack(cols, 1)).reshape(boot.n_boot, k, 6)
    n = sums[:, :, 0]
    r = correlation_from_moments(sums, var_floor=1e-12)
    snr = snr_weight(r * n / (n + CORR_SHRINK), n)
    tot = snr.sum(1, keepdims=True)
    wt = np.where(tot > 0, snr / np.where(tot > 0, tot, 1.0), 1.0 / k)
    lam = shrinkage(h.judge_n)
    wt = (1 - lam) * wt + lam / k
    wt = wt / wt.sum(1, keepdims=True)
    # r^2 of a resample is biased upward (most for weak judges), so the replicates sit off
    # the estimate: keep their spread, centred on the estimate (median-shifted percentiles)
    lo, hi = percentile_interval(wt, level)
    mid = np.median(wt, 0)
    floor = lam / k  # the shrinkage share every judge keeps
    return np.clip(w + (lo - mid), floor, 1.0), np.clip(w + (hi - mid), floor, 1.0)


def conflict_aware_ranking(
    model: ScoreModel, data: RunData, boot: Bootstrap, level: float
) -> ConflictAwareRanking:
    families = model_families(data.config, [*model.judges, *model.scorers, *model.students])
    j, names = judgments_of(model, families)
    h = fit_headline(j)
    reps = h.replicates(boot)
    ci = percentile_interval(reps, level) if len(reps) else (
        np.full(model.n_students, np.nan),
        np.full(model.n_students, np.nan),
    )
    comp = compare_students(list(model.students), h.score, reps, level)
    return ConflictAwareRanking(h, names, families, ci, reps, comp, _weight_ci(h, j, boot, level), j)


def unrelated_weight(r: ConflictAwareRanking) -> np.ndarray:
    """Per student: the share of the judge weight that may score it (judges unrelated to
    it that scored at least one of its answers). Low: its headline score rests on the
    judges the ensemble trusts least."""
    j, w = r.judgments, r.headline.judge_weight
    keep = ~j.conflicted & ~np.isnan(j.value)
    scored_by = np.zeros((j.n_students, j.n_judges), bool)
    scored_by[j.student[keep], j.judge[keep]] = True
    out: np.ndarray = scored_by.astype(np.float64) @ w if j.n_judges else np.zeros(j.n_students)
    return out


def teacher_weights(r: ConflictAwareRanking, teachers: list[str]) -> dict[str, float | None]:
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


def common_items(r: ConflictAwareRanking, students: list[str]) -> dict[str, Any]:
    """The headline score on the datapoints every scored student has a score on."""
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

