"""The headline ranking: conflict-aware, leniency-corrected, discrimination-weighted.

Input is one row per *judgment*: a judge's score (mean over rubric factors) of one
student's answer to one item (datapoint), with a flag for conflicted judgments (the judge
grades its own answer or an answer of its family, see :mod:`coeval_analysis.families`).

1. **Conflicts left out.** Conflicted judgments take no part in anything below: a student
   is scored by the judges unrelated to it. (Measured against modelling a judge x family
   bias term on the synthetic scenarios: leaving them out was as good and has no
   parameters to estimate from the few related answers; docs/analysis.md.)
2. **Judge leniency.** Each judge has an additive leniency ``b_j`` (its mean excess over
   the consensus of the others on the same answers); answer scores use ``value - b_j``, so
   a student graded by a different subset of judges (its relatives left out) is not
   advantaged by which judges remain.
3. **Judge weights.** ``w_j ∝ r^2 / (1 - r^2)`` for ``r`` the judge's correlation with the
   leave-one-out consensus (a one-factor signal-to-noise ratio; the part of ``r^2`` chance
   explains, ``4 / n``, is removed, so when no judge agrees beyond chance all stay equal),
   iterated with damping
   (half old, half new) until no weight moves by more than ``tol``, then shrunk toward
   equal weights by ``N0 / (N0 + n)`` for ``n`` the judge's judgments: a judge with little
   evidence is near equal weight, and no judge can hold all of it.
4. **Item weights measure discrimination**: the correlation, across students, between an
   item's (item-centred) scores and the students' scores on the other items. An item's
   weight blends its own and its teacher's mean discrimination (one item rests on a
   handful of students), floored at :data:`ITEM_FLOOR`: a teacher whose items are unrelated
   to student quality gets little weight.
5. **Missing answers.** A student's score is the grand mean plus its weighted mean
   *item-centred* score, so a student whose hardest answers failed is compared on the
   items it answered with how others did on those same items, not lifted by the gaps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coeval_analysis.stats.bootstrap import Bootstrap

__all__ = ["Headline", "Judgments", "fit_headline", "shrinkage", "snr_weight", "weighted_judge_consensus"]

SHRINK_JUDGMENTS = 20.0  #: N0 of the judge-weight shrinkage toward equal weights
CORR_SHRINK = 30.0  #: r is shrunk by n / (n + 30) before the signal-to-noise weight
ITEM_FLOOR = 0.05
DAMPING = 0.5
MAX_ITER = 500
TOL = 1e-7


@dataclass(frozen=True)
class Judgments:
    """One row per (item, student, judge) judgment; ``conflicted`` rows are left out."""

    item: np.ndarray
    student: np.ndarray
    judge: np.ndarray
    value: np.ndarray
    conflicted: np.ndarray
    n_items: int
    n_students: int
    n_judges: int
    item_teacher: np.ndarray  #: teacher code per item (-1: unknown)


@dataclass
class Headline:
    judge_weight: np.ndarray
    judge_leniency: np.ndarray
    judge_r: np.ndarray
    judge_n: np.ndarray  #: non-conflicted judgments per judge
    converged: bool
    iterations: int
    item_weight: np.ndarray
    item_discrimination: np.ndarray
    cell: np.ndarray  #: items x students leniency-corrected consensus (NaN: no judgment)
    grand: float
    score: np.ndarray  #: per student (NaN: nothing scored)
    n_conflicted: np.ndarray  #: per judge, judgments left out

    def numerators(self) -> tuple[np.ndarray, np.ndarray]:
        """(num, den) items x students with score = grand + sum num / sum den."""
        has = ~np.isnan(self.cell)
        mu = _row_mean(self.cell)
        dev = np.where(has, self.cell - mu[:, None], 0.0)
        d = self.item_weight[:, None]
        return dev * d, has * d

    def replicates(self, boot: Bootstrap) -> np.ndarray:
        """(n_boot, students) bootstrap scores over items, weights held fixed."""
        num, den = self.numerators()
        if num.shape[1] == 0 or boot.n_boot == 0:
            return np.zeros((boot.n_boot, num.shape[1]))
        return self.grand + boot.replicates(num, den)


def _row_mean(mat: np.ndarray) -> np.ndarray:
    has = ~np.isnan(mat)
    n = has.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, np.where(has, mat, 0.0).sum(1) / np.maximum(n, 1), np.nan)


def weighted_judge_consensus(
    cell: np.ndarray, judge: np.ndarray, value: np.ndarray, w: np.ndarray, b: np.ndarray, n_cells: int
) -> tuple[np.ndarray, np.ndarray]:
    """(weighted sum, total weight) per cell of ``value - b_judge``."""
    wj = w[judge]
    num = np.bincount(cell, weights=wj * (value - b[judge]), minlength=n_cells)
    den = np.bincount(cell, weights=wj, minlength=n_cells)
    return num, den


def _loo_correlation(
    cell: np.ndarray,
    judge: np.ndarray,
    value: np.ndarray,
    w: np.ndarray,
    b: np.ndarray,
    k: int,
    consensus: tuple[np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """Per judge: correlation of its scores with the weighted consensus of the *other*
    judges on the same answers (moments by bincount; NaN where undefined), and judgments
    used. ``consensus``: :func:`weighted_judge_consensus` with the same ``w`` and ``b``."""
    num, den = consensus
    wj = w[judge]
    rest_den = den[cell] - wj
    ok = rest_den > 1e-9 * max(float(w.max()), 1e-12)
    loo = np.where(ok, (num[cell] - wj * (value - b[judge])) / np.where(ok, rest_den, 1.0), 0.0)
    jj = judge[ok]
    x, c = value[ok], loo[ok]
    n = np.bincount(jj, minlength=k).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = np.bincount(jj, x, k) / n
        mc = np.bincount(jj, c, k) / n
        cov = np.bincount(jj, x * c, k) / n - mx * mc
        vx = np.bincount(jj, x * x, k) / n - mx**2
        vc = np.bincount(jj, c * c, k) / n - mc**2
        r = np.where((n >= 3) & (vx > 1e-12) & (vc > 1e-12), cov / np.sqrt(vx * vc), np.nan)
    return r, n


def snr_weight(r: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Signal-to-noise ratio r^2 / (1 - r^2), counting only the part of r^2 beyond what
    chance gives on n judgments (about 2 standard errors, 4 / n): a judge whose agreement
    with the others is indistinguishable from zero gets none."""
    rr = np.clip(r, 0.0, 0.999)
    excess = np.clip(rr**2 - 4.0 / np.maximum(n, 1.0), 0.0, None)
    out: np.ndarray = excess / (1.0 - rr**2)
    return out


def _fit_judges(
    cell: np.ndarray, judge: np.ndarray, value: np.ndarray, n_cells: int, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool, int]:
    """(weights, leniency, r, n, converged, iterations) by damped fixed-point iteration."""
    w = np.full(k, 1.0 / k)
    b = np.zeros(k)
    r = np.full(k, np.nan)
    n = np.bincount(judge, minlength=k).astype(np.float64)
    converged, it = False, 0
    for it in range(1, MAX_ITER + 1):  # noqa: B007 - the count is reported
        num, den = weighted_judge_consensus(cell, judge, value, w, b, n_cells)
        theta = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
        resid = value - theta[cell]
        ok = ~np.isnan(resid)
        cnt = np.bincount(judge[ok], minlength=k)
        new_b = np.where(cnt > 0, np.bincount(judge[ok], resid[ok], k) / np.maximum(cnt, 1), 0.0)
        new_b -= np.average(new_b, weights=w) if w.sum() > 0 else 0.0
        # the consensus of this round (leniencies of the last): one pass fewer per round,
        # and the same fixed point
        r, n = _loo_correlation(cell, judge, value, w, b, k, (num, den))
        target = snr_weight(np.nan_to_num(r) * n / (n + CORR_SHRINK), n)
        target = target / target.sum() if target.sum() > 0 else np.full(k, 1.0 / k)
        new_w = (1 - DAMPING) * w + DAMPING * target
        step = max(float(np.abs(new_w - w).max()), float(np.abs(new_b - b).max()))
        w, b = new_w, new_b
        if step < TOL:
            converged = True
            break
    lam = shrinkage(n)
    w = (1 - lam) * w + lam / k
    return w / w.sum(), b, r, n, converged, it


def shrinkage(n: np.ndarray) -> float:
    """Share of equal weight mixed into the judge weights: ``N0 / (N0 + median judgments
    per judge)``; large for a handful of judgments, fading as evidence grows. One share for
    all judges, so a judge with few judgments keeps the little weight its few judgments
    earn (it only touches the answers it judged anyway)."""
    return SHRINK_JUDGMENTS / (SHRINK_JUDGMENTS + float(np.median(n))) if len(n) else 1.0


def _discrimination(cell: np.ndarray) -> np.ndarray:
    """Per item: correlation across students of its centred scores with the students'
    mean centred score on the other items (0 where undefined)."""
    has = ~np.isnan(cell)
    dev = np.where(has, cell - _row_mean(cell)[:, None], 0.0)
    n_s = has.sum(0)
    tot = dev.sum(0)
    rest = np.where(has, (tot[None, :] - dev) / np.maximum(n_s - 1, 1)[None, :], 0.0)
    m = has.sum(1).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mr = rest.sum(1) / m
        rc = np.where(has, rest - mr[:, None], 0.0)
        cov = (dev * rc).sum(1)
        r = cov / np.sqrt((dev**2).sum(1) * (rc**2).sum(1))
    return np.where((m >= 3) & np.isfinite(r), r, 0.0)


def _item_weights(disc: np.ndarray, item_teacher: np.ndarray) -> np.ndarray:
    """Half the item's own discrimination, half its teacher's mean, floored."""
    pos = np.clip(disc, 0.0, None)
    codes = np.where(item_teacher >= 0, item_teacher, item_teacher.max(initial=0) + 1)
    cnt = np.bincount(codes)
    t_mean = np.bincount(codes, pos) / np.maximum(cnt, 1)
    weights: np.ndarray = np.maximum(0.5 * pos + 0.5 * t_mean[codes], ITEM_FLOOR)
    return weights


def fit_headline(j: Judgments) -> Headline:
    """Fit judge weights and leniencies on non-conflicted judgments, then score students."""
    S, k = j.n_students, j.n_judges
    keep = ~j.conflicted & ~np.isnan(j.value) & (j.item >= 0) & (j.student >= 0)
    cell = j.item[keep].astype(np.int64) * S + j.student[keep]
    judge, value = j.judge[keep].astype(np.int64), j.value[keep].astype(np.float64)
    n_cells = j.n_items * S
    if k == 0 or len(cell) == 0:
        w, b, conv, it = np.full(k, 1.0 / max(k, 1)), np.zeros(k), True, 0
        r, n = np.full(k, np.nan), np.zeros(k)
        mat = np.full((j.n_items, S), np.nan)
    else:
        w, b, r, n, conv, it = _fit_judges(cell, judge, value, n_cells, k)
        num, den = weighted_judge_consensus(cell, judge, value, w, b, n_cells)
        mat = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan).reshape(j.n_items, S)
    disc = _discrimination(mat)
    d = _item_weights(disc, j.item_teacher) if j.n_items else np.zeros(0)
    has = ~np.isnan(mat)
    grand = float(np.nanmean(mat)) if has.any() else float("nan")
    dev = np.where(has, mat - _row_mean(mat)[:, None], 0.0)
    tot = (has * d[:, None]).sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.where(tot > 0, grand + (dev * d[:, None]).sum(0) / np.where(tot > 0, tot, 1.0), np.nan)
    n_conf = np.bincount(j.judge[j.conflicted].astype(np.int64), minlength=k)[:k]
    return Headline(w, b, r, n, conv, it, d, disc, mat, grand, score, n_conf.astype(np.int64))
