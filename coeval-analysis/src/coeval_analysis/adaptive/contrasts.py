"""The ranking a design refits after every round: cheap enough to refit at every look.

Each answer gets one score: the weighted mean, over the kept judges, of their scores less
each judge's leniency, both measured on the calibration slice (the weight grows with a
judge's agreement with the others); a judge's scores of its own family's students are left
out where judges of other families, carrying a tenth of the weight or more, graded the
answer too. Student quality is then the least-squares fit of ``score = datapoint + student``
over the answers bought, so that a student let go early is still compared with the others
through the datapoints they shared.
Its uncertainty is the sandwich (cluster-robust) variance over datapoints: each datapoint is
one independent draw, whatever the judges and students on it. The estimator is linear in the
datapoints' scores, so a look costs one small matrix inverse, not a bootstrap.

On the full grid (every student on every datapoint) a pair's difference is the mean of its
paired differences and its variance that mean's squared standard error.
"""

from __future__ import annotations

import attrs
import numpy as np
from scipy.stats import t as student_t

from coeval_analysis.adaptive.stopping import Intervals
from coeval_analysis.stats.headline import Judgments

__all__ = ["AnswerScores", "answer_scores", "dense", "fit_intervals", "judge_leniency", "judge_weights"]

#: a datapoint's scores that vary less than this between two students still leave this
#: much doubt: a dozen identical differences do not prove a difference of exactly that size
MIN_SD = 0.02
#: a judge's scores of its own family's students are left out where the unrelated judges
#: that graded the answer carry at least this share of the weight (a nearly flat unrelated
#: judge alone would otherwise decide those students' places)
UNRELATED_SHARE = 0.1
#: a judge's agreement counts as at most this in its weight (one near 1 would take all)
MAX_AGREEMENT = 0.9


@attrs.frozen
class AnswerScores:
    """(datapoints, students) answer scores, NaN where no answer was bought and graded."""

    value: np.ndarray


def dense(j: Judgments) -> tuple[np.ndarray, np.ndarray]:
    """(judges, datapoints, students) scores (NaN: none) and conflicted flags."""
    x = np.full((j.n_judges, j.n_items, j.n_students), np.nan)
    c = np.zeros(x.shape, bool)
    x[j.judge, j.item, j.student] = j.value
    c[j.judge, j.item, j.student] = j.conflicted
    return x, c


def judge_leniency(x: np.ndarray, judges: np.ndarray, conflicted: np.ndarray | None = None) -> np.ndarray:
    """Per judge, its mean score less the mean of the ``judges`` given, over the answers all of
    them graded; ``x``: (judges, datapoints, students) scores, NaN where none. Answers one of
    the ``judges`` is ``conflicted`` on (same shape; None: none) are left out: a judge's
    favour for its family's students would otherwise count as leniency, and move the centre
    every other judge's leniency is measured from."""
    out = np.zeros(x.shape[0])
    if judges.size == 0:
        return out
    common = ~np.isnan(x[judges]).any(0)
    if conflicted is not None:
        common &= ~conflicted[judges].any(0)
    if not common.any():
        return out
    means = np.array([float(np.mean(x[j][common])) if not np.isnan(x[j][common]).any() else np.nan
                      for j in range(x.shape[0])])  # fmt: skip
    centre = float(np.mean(means[judges]))
    return np.where(np.isnan(means), 0.0, means - centre)


def judge_weights(agreement: np.ndarray, spread: np.ndarray) -> np.ndarray:
    """Per judge, its weight in an answer's score: ``r / (sd (1 - r^2))`` for a judge whose
    scores correlate ``r`` with the consensus and spread ``sd`` within a datapoint, the
    weight of least squares for scores ``lambda theta + noise``, in which a judge's
    information is ``r^2 / (1 - r^2)`` (a judge agreeing 0 or less weighs nothing)."""
    r = np.clip(agreement, 0.0, MAX_AGREEMENT)
    with np.errstate(invalid="ignore", divide="ignore"):
        w = np.where(spread > 0, r / (np.maximum(spread, 1e-9) * (1.0 - r * r)), 0.0)
    return np.nan_to_num(w)


def answer_scores(x: np.ndarray, conflicted: np.ndarray, kept: np.ndarray, leniency: np.ndarray,
                  weight: np.ndarray | None = None) -> AnswerScores:
    """One score per answer: the ``weight``-ed mean (None: plain) of the ``kept`` judges'
    (indices) scores in ``x`` (judges, datapoints, students), their ``conflicted`` scores
    (same shape) left out where unrelated kept judges carrying at least ``UNRELATED_SHARE``
    of the weight graded the answer too."""
    xs = x[kept] - leniency[kept][:, None, None]
    w = (np.ones(x.shape[0]) if weight is None else weight)[kept][:, None, None]
    seen = ~np.isnan(xs) & (w > 0)
    clean = seen & ~conflicted[kept]
    enough = np.where(clean, w, 0.0).sum(0) >= UNRELATED_SHARE * np.where(seen, w, 0.0).sum(0)
    use = np.where((clean.any(0) & enough)[None], clean, seen)
    total = np.where(use, xs * w, 0.0).sum(0)
    count = np.where(use, w, 0.0).sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return AnswerScores(np.where(count > 0, total / np.where(count > 0, count, 1.0), np.nan))


def fit_intervals(scores: AnswerScores, alpha: float, item_weight: np.ndarray | None = None) -> Intervals:
    """Student scores (relative to their mean) with ``1 - alpha`` intervals, and every pair's
    difference with its interval (t quantiles on datapoints - 1 degrees of freedom); each
    datapoint counts by its ``item_weight`` (None: alike)."""
    y = scores.value
    present = ~np.isnan(y)
    w_all = np.ones(y.shape[0]) if item_weight is None else np.asarray(item_weight, float)
    rows = (present.sum(1) >= 2) & (w_all > 0)
    y, present, w = y[rows], present[rows], w_all[rows][:, None]
    n, s = present.shape
    if n < 2:
        nan = np.full(s, np.nan)
        inf = np.full((s, s), np.inf)
        return Intervals(nan, nan, nan, -inf, inf)
    p = present.astype(float)
    m = p.sum(1, keepdims=True)
    centred = np.where(present, y - np.where(present, y, 0.0).sum(1, keepdims=True) / m, 0.0)
    # the normal equations of score = datapoint + student, datapoint effects profiled out
    lap = np.diag((w * p).sum(0)) - (w * p / m).T @ p
    inv = np.linalg.pinv(lap, rcond=1e-9, hermitian=True)  # its null space (a common shift) dropped
    theta = inv @ (w * centred).sum(0)
    fitted = np.where(present, theta[None] - (p * theta[None]).sum(1, keepdims=True) / m, 0.0)
    resid = w * (centred - fitted)
    meat = resid.T @ resid * n / (n - 1)
    cov = inv @ meat @ inv
    var_diff = np.diag(cov)[:, None] + np.diag(cov)[None, :] - 2.0 * cov
    # a pair's doubt is never below MIN_SD per datapoint they share (weighted: the effective count)
    shared = (w * p).T @ p
    shared = np.where(shared > 0, shared**2 / np.maximum((w * w * p).T @ p, 1e-12), 0.0)
    floor = np.where(shared > 0, MIN_SD**2 / np.maximum(shared, 1), np.inf)
    var_diff = np.maximum(var_diff, floor)
    np.fill_diagonal(var_diff, 0.0)
    q = float(student_t.ppf(1.0 - alpha / 2.0, n - 1))
    diff = theta[:, None] - theta[None, :]
    half = q * np.sqrt(var_diff)
    centre = np.eye(s) - 1.0 / s
    n_eff = float(w.sum() ** 2 / np.sum(w * w))
    var_score = np.maximum(np.einsum("ij,jk,ik->i", centre, cov, centre), MIN_SD**2 / n_eff)
    score_half = q * np.sqrt(var_score)
    reached = p.sum(0) > 0
    score = np.where(reached, theta, np.nan)
    return Intervals(score, score - score_half, score + score_half, diff - half, diff + half)
