"""Each model judge's per-student taste measured against the reference judge (human labels,
gold): the taste of every student the reference grades, and the spread of tastes that
shrinks those estimates (see :mod:`coeval_analysis.stats.measurement`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coeval_analysis.stats.measurement_model import TASTE_FLOOR, Fit, Layout, measured, reference_measured

__all__ = ["LABELLED_STUDENTS", "TREND_STUDENTS", "RefTaste", "taste_from_reference"]

#: students, each with at least two answers both graded, from which the labels measure a
#: judge's taste spread themselves (fewer: the spread measured against the other judges)
LABELLED_STUDENTS = 3
#: students, each with at least two answers both graded, from which a judge's departure from
#: the labels is read as a line in the students' quality plus a taste about it
TREND_STUDENTS = 4
_TINY = 1e-12


@dataclass
class RefTaste:
    """Per (student, judge), in theta units: the judge's estimated taste for the student
    (``shift``), the share of the estimate's evidence in it (``gain``, 0: the prior alone),
    the variances of the judge's and the reference's noise in the estimate, and the taste
    prior ``t_j^2`` it was shrunk by."""

    shift: np.ndarray  #: (S, K)
    gain: np.ndarray  #: (S, K)
    judge_var: np.ndarray  #: (S, K)
    reference_var: np.ndarray  #: (S, K)
    prior: np.ndarray  #: (1, K)


def taste_from_reference(lay: Layout, f: Fit, dev: np.ndarray) -> RefTaste | None:
    """Each model judge's taste for each student the reference judge grades: the mean, on
    the answers both graded, of the judge's view of the answer less the reference's (the
    answer's own quality cancels), shrunk by the judge's taste prior (:func:`_prior`).
    None without a reference whose scale is measured (nothing to tell a taste from
    quality): a run without labels is scored as before."""
    if not reference_measured(lay, f.scale):
        return None
    S, K, r = lay.n_students, lay.K, lay.K - 1
    lam = f.scale
    ok_j = measured(lam)
    ok_j[r] = False
    both = lay.seen & lay.seen[:, r : r + 1] & ok_j[None, :]
    safe = np.where(ok_j, lam, 1.0)
    diff = np.where(both, dev / safe[None, :] - (dev[:, r] / lam[r])[:, None], 0.0)
    key = lay.student_judge_key
    n = np.bincount(key, both.ravel().astype(np.float64), S * K).reshape(S, K)
    tot = np.bincount(key, diff.ravel(), S * K).reshape(S, K)
    has = n > 0
    nn = np.where(has, n, 1.0)
    judge_var = np.where(has, (f.noise / safe**2)[None, :] / nn, 0.0)
    reference_var = np.where(has, f.noise[r] / lam[r] ** 2 / nn, 0.0)
    raw = tot / nn
    var = judge_var + reference_var
    floor = TASTE_FLOOR**2 / safe**2
    trend, line_spread = _trend(raw, n, var, _student_quality(lay, f, dev), floor)
    spread = np.where(np.isnan(line_spread), _prior(raw, n, var, f.taste / safe**2, floor), line_spread)
    prior = np.where(ok_j, spread, 0.0)[None, :]
    gain = np.where(has, prior / np.maximum(prior + var, _TINY), 0.0)
    shift = np.where(ok_j[None, :], trend + gain * (raw - trend), 0.0)
    return RefTaste(shift, gain, judge_var, reference_var, prior)


def _student_quality(lay: Layout, f: Fit, dev: np.ndarray) -> np.ndarray:
    """Each student's quality (theta units, relative to the datapoints' means), the line's
    regressor: the information-weighted mean of the measured judges' and the reference's
    views of its answers, not corrected for the judges' bias and taste (they move it a
    little beside what separates the students)."""
    S = lay.n_students
    on = lay.seen & measured(f.scale)[None, :]
    g = np.where(on, f.scale / f.noise, 0.0)
    h = np.where(on, f.scale**2 / f.noise, 0.0)
    num = np.bincount(lay.cell_student, (g * dev).sum(1), S)
    den = np.bincount(lay.cell_student, h.sum(1), S)
    out: np.ndarray = np.where(den > _TINY, num / np.maximum(den, _TINY), 0.0)
    return out


def _trend(
    raw: np.ndarray, n: np.ndarray, var: np.ndarray, quality: np.ndarray, floor: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(S, K) and (K,): each judge's departure from the reference as a line in the
    student's quality, fitted (weighted by each student's noise) where the reference grades
    ``TREND_STUDENTS`` or more students on two answers or more (0 elsewhere), and the spread
    of the tastes about the line, by DerSimonian and Laird's method for a meta-regression
    (NaN where no line is fitted: :func:`_prior` then gives it). A judge and a labeller whose
    levels saturate differently (one gives the best answers High where the other still
    tells them apart) depart from each other by an amount that follows quality: two
    neighbouring students share it. Read as independent per-student tastes, it was a spread
    several times the floor that no label could remove and that widened every gap between
    neighbours; as a line, it moves neighbours alike and leaves their gap to the data. The
    line is applied to every student, its quality held within the labelled students' range
    (no extrapolation)."""
    S, K = raw.shape
    line = np.zeros((S, K))
    spread = np.full(K, np.nan)
    for k in range(K):
        use = n[:, k] >= 2
        if use.sum() < TREND_STUDENTS:
            continue
        w = 1.0 / np.maximum(var[use, k], _TINY)
        x = quality[use]
        design = np.stack([np.ones(len(x)), x], 1)
        info = design.T @ (w[:, None] * design)
        if np.linalg.cond(info) > 1e12:  # the labelled students' quality does not vary
            continue
        beta = np.linalg.solve(info, design.T @ (w * raw[use, k]))
        q = float((w * (raw[use, k] - design @ beta) ** 2).sum())  # Cochran's Q about the line
        denom = w.sum() - np.trace(np.linalg.solve(info, design.T @ (w[:, None] ** 2 * design)))
        spread[k] = max((q - (len(x) - 2)) / max(denom, _TINY), float(floor[k]))
        line[:, k] = beta[0] + beta[1] * np.clip(quality, x.min(), x.max())
    return line, spread


def _prior(
    raw: np.ndarray, n: np.ndarray, var: np.ndarray, fallback: np.ndarray, floor: np.ndarray
) -> np.ndarray:
    """Per judge, the spread ``t_j^2`` of its tastes across students, measured where the
    reference grades ``LABELLED_STUDENTS`` or more of them on two or more answers each: the
    variance across those students of the judge's mean departure from the reference beyond
    what the noise of both gives, floored at ``TASTE_FLOOR``. It is the between-study
    variance of a meta-analysis (each student a study, its departure's noise known), so it
    is estimated as one is, by DerSimonian and Laird's method: each student weighted by the
    inverse of its noise. A student with two labels is as noisy as its labeller; unweighted,
    its departure counted as much as one with twenty labels, and two such students read as
    a taste the well-labelled ones showed was not there. With equal noise it is the plain
    variance less the noise.
    The spread measured against the other model judges (``fallback``) carries their
    nonlinearity (a judge whose levels saturate at one end differs by student from a judge
    whose levels saturate at the other), which a reference on the judges' own rubric does
    not; where the labels show a judge has a real taste, its spread comes out as large."""
    use = n >= 2
    k = use.sum(0)
    w = np.where(use, 1.0 / np.maximum(var, _TINY), 0.0)
    sw = np.maximum(w.sum(0), _TINY)
    mean = (w * np.where(use, raw, 0.0)).sum(0) / sw
    q = (w * np.where(use, (raw - mean[None, :]) ** 2, 0.0)).sum(0)  # Cochran's Q
    spread = (q - (k - 1)) / np.maximum(sw - (w**2).sum(0) / sw, _TINY)
    out: np.ndarray = np.where(k >= LABELLED_STUDENTS, np.maximum(spread, floor), fallback)
    return out
