"""How much each judge and each teacher's datapoints count in the ranking a design refits,
measured once on the calibration slice (where every student answers and every judge grades).

Both are least-squares weights ``b / v`` for a measurement ``b * truth + error`` with error
variance ``v``, measured at the level the ranking aggregates to: a student's mean.

* A judge with a taste for some students (or against them) disagrees with the others
  persistently, answer after answer; its answer-level agreement hides that, its per-student
  means show it. :func:`taste_discount` cuts such a judge's weight by how much worse its
  per-student means follow the other judges' than the median judge's do.
* A teacher whose datapoints do not tell the students apart (every answer alike, or alike
  but for noise) adds only noise to every comparison. :func:`teacher_weights` weighs each
  teacher's datapoints by how well the students' scores on them follow the students' scores
  on the other teachers' datapoints.

Both are fixed after the calibration slice, so every later look estimates the same thing;
the ranking reported where the design stops measures the teachers' again on everything
bought (:mod:`~coeval_analysis.adaptive.refit`).
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["MIN_STUDENTS", "datapoint_deviations", "loading_weight", "taste_discount", "teacher_weights"]

#: students a per-student fit needs before it says anything (fewer: no discount, equal teachers)
MIN_STUDENTS = 4


def loading_weight(measured: np.ndarray, reference: np.ndarray) -> float:
    """``b / v`` for ``measured = a + b * reference + e`` (``v``: the variance of ``e``), 0
    where ``b`` is not positive; NaN entries left out, NaN when too few remain."""
    ok = ~np.isnan(measured) & ~np.isnan(reference)
    if ok.sum() < MIN_STUDENTS:
        return float("nan")
    a, c = measured[ok] - measured[ok].mean(), reference[ok] - reference[ok].mean()
    vc = float(c @ c)
    if vc <= 1e-12:
        return float("nan")
    b = float(a @ c) / vc
    v = float(np.sum((a - b * c) ** 2)) / (int(ok.sum()) - 2)
    return max(b, 0.0) / max(v, 1e-6)


def _nanmean(x: np.ndarray, axis: int) -> np.ndarray:
    with warnings.catch_warnings():  # a row with no score is NaN, not a warning
        warnings.simplefilter("ignore", RuntimeWarning)
        out: np.ndarray = np.nanmean(x, axis=axis)
        return out


def datapoint_deviations(x: np.ndarray, conflicted: np.ndarray | None = None) -> np.ndarray:
    """(judges, datapoints, students) scores ``x`` less each judge's mean on their datapoint
    (NaN where none), with the ``conflicted`` scores, of a judge's own family's students, left
    out (NaN): the input of :func:`taste_discount`, whose favour for them counts elsewhere."""
    with warnings.catch_warnings():  # datapoints a judge did not grade have no mean
        warnings.simplefilter("ignore", RuntimeWarning)
        centred = x - np.nanmean(x, axis=2, keepdims=True)
    out: np.ndarray = centred if conflicted is None else np.where(conflicted, np.nan, centred)
    return out


def taste_discount(centred: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Per judge, a factor in [0, 1] for its ``weight``: from ``centred`` (judges, datapoints,
    students) scores less their datapoint's mean (NaN: none, or a judge's own family's),
    its per-student means fit against the ``weight``-ed mean of the other judges'; the
    factor is its ``b / v`` relative to its ``weight``, over the median judge's (1 at most)."""
    means = _nanmean(centred, 1)  # (judges, students)
    have = ~np.isnan(means)
    k = means.shape[0]
    ratio = np.full(k, np.nan)
    for judge in np.flatnonzero(weight > 0):
        others = np.where(np.arange(k) == judge, 0.0, np.maximum(weight, 0.0))[:, None] * have
        mass = others.sum(0)
        consensus = np.where(mass > 0, (np.where(have, means, 0.0) * others).sum(0) / np.maximum(mass, 1e-12),
                             np.nan)  # fmt: skip
        ratio[judge] = loading_weight(means[judge], consensus) / weight[judge]
    known = ratio[~np.isnan(ratio)]
    reference = float(np.median(known)) if known.size else 0.0
    if reference <= 0:
        return np.ones(k)
    out: np.ndarray = np.where(np.isnan(ratio), 1.0, np.clip(ratio / reference, 0.0, 1.0))
    return out


def teacher_weights(scores: np.ndarray, item_teacher: np.ndarray) -> np.ndarray:
    """Per datapoint, its teacher's weight (mean 1 over the datapoints scored), from the
    (datapoints, students) answer ``scores`` of the slice (NaN: none): the fit of each
    teacher's datapoint-centred scores against the students' mean on the other teachers'."""
    centred = scores - _nanmean(scores, 1)[:, None]
    scored = (~np.isnan(scores)).sum(1) >= 2
    teachers = np.unique(item_teacher[scored])
    out = np.ones(item_teacher.size)
    if teachers.size < 2:
        return out
    raw = {}
    for t in teachers:
        mine = scored & (item_teacher == t)
        rest = scored & (item_teacher != t)
        reference = _nanmean(centred[rest], 0)
        # one b / v over the teacher's datapoints: their rows stacked
        raw[int(t)] = loading_weight(centred[mine].ravel(), np.tile(reference, int(mine.sum())))
    known = [w for w in raw.values() if not np.isnan(w)]
    if not known or max(known) <= 0:
        return out
    fill = float(np.mean(known))  # a teacher with too few students scored counts as the average
    per_teacher = {t: (fill if np.isnan(w) else w) for t, w in raw.items()}
    for t, w in per_teacher.items():
        out[item_teacher == t] = w
    mean = float(out[scored].mean()) if scored.any() else 1.0
    result: np.ndarray = out / mean if mean > 0 else np.ones(item_teacher.size)
    return result
