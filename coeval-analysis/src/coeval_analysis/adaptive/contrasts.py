"""The ranking a design refits after every round: cheap enough to refit at every look.

Each answer gets one score: the mean, over the kept judges, of their scores less each judge's
leniency (measured on the calibration slice); a judge's scores of its own family's students
are left out where a judge of another family graded the answer too. Student quality is then
the least-squares fit of ``score = datapoint + student`` over the answers bought, so that a
student let go early is still compared with the others through the datapoints they shared.
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

__all__ = ["AnswerScores", "answer_scores", "fit_intervals", "judge_leniency"]

#: a datapoint's scores that vary less than this between two students still leave this
#: much doubt: a dozen identical differences do not prove a difference of exactly that size
MIN_SD = 0.02


@attrs.frozen
class AnswerScores:
    """(datapoints, students) answer scores, NaN where no answer was bought and graded."""

    value: np.ndarray


def judge_leniency(x: np.ndarray, judges: np.ndarray) -> np.ndarray:
    """Per judge, its mean score less the mean of the ``judges`` given, over the answers all of
    them graded; ``x``: (judges, datapoints, students) scores, NaN where none."""
    out = np.zeros(x.shape[0])
    if judges.size == 0:
        return out
    common = ~np.isnan(x[judges]).any(0)
    if not common.any():
        return out
    means = np.array([float(np.mean(x[j][common])) if not np.isnan(x[j][common]).any() else np.nan
                      for j in range(x.shape[0])])  # fmt: skip
    centre = float(np.mean(means[judges]))
    return np.where(np.isnan(means), 0.0, means - centre)


def answer_scores(x: np.ndarray, conflicted: np.ndarray, kept: np.ndarray, leniency: np.ndarray) -> AnswerScores:
    """One score per answer from the ``kept`` judges (indices) of ``x`` (judges, datapoints,
    students), their ``conflicted`` scores (same shape) left out where an unrelated kept judge
    graded the answer too."""
    xs = x[kept] - leniency[kept][:, None, None]
    seen = ~np.isnan(xs)
    clean = seen & ~conflicted[kept]
    use = np.where(clean.any(0)[None], clean, seen)
    total = np.where(use, xs, 0.0).sum(0)
    count = use.sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return AnswerScores(np.where(count > 0, total / np.maximum(count, 1), np.nan))


def fit_intervals(scores: AnswerScores, alpha: float) -> Intervals:
    """Student scores (relative to their mean) with ``1 - alpha`` intervals, and every pair's
    difference with its interval (t quantiles on datapoints - 1 degrees of freedom)."""
    y = scores.value
    present = ~np.isnan(y)
    rows = present.sum(1) >= 2
    y, present = y[rows], present[rows]
    n, s = present.shape
    if n < 2:
        nan = np.full(s, np.nan)
        inf = np.full((s, s), np.inf)
        return Intervals(nan, nan, nan, -inf, inf)
    p = present.astype(float)
    m = p.sum(1, keepdims=True)
    centred = np.where(present, y - np.where(present, y, 0.0).sum(1, keepdims=True) / m, 0.0)
    # the normal equations of score = datapoint + student, datapoint effects profiled out
    lap = np.diag(p.sum(0)) - (p / m).T @ p
    inv = np.linalg.pinv(lap)
    theta = inv @ centred.sum(0)
    fitted = np.where(present, theta[None] - (p * theta[None]).sum(1, keepdims=True) / m, 0.0)
    resid = centred - fitted
    meat = resid.T @ resid * n / (n - 1)
    cov = inv @ meat @ inv
    var_diff = np.diag(cov)[:, None] + np.diag(cov)[None, :] - 2.0 * cov
    # a pair's doubt is never below MIN_SD per datapoint they share
    shared = p.T @ p
    floor = np.where(shared > 0, MIN_SD**2 / np.maximum(shared, 1), np.inf)
    var_diff = np.maximum(var_diff, floor)
    np.fill_diagonal(var_diff, 0.0)
    q = float(student_t.ppf(1.0 - alpha / 2.0, n - 1))
    diff = theta[:, None] - theta[None, :]
    half = q * np.sqrt(var_diff)
    centre = np.eye(s) - 1.0 / s
    var_score = np.maximum(np.einsum("ij,jk,ik->i", centre, cov, centre), MIN_SD**2 / n)
    score_half = q * np.sqrt(var_score)
    reached = p.sum(0) > 0
    score = np.where(reached, theta, np.nan)
    return Intervals(score, score - score_half, score + score_half, diff - half, diff + half)
