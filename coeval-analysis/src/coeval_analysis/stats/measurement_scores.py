"""Student quality from a fitted measurement model: the information-weighted mean of each
student's answers, its teachers' weights, and the scale it is reported on (see
:mod:`coeval_analysis.stats.measurement`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from coeval_analysis.stats.measurement_model import (
    TEACHER_FLOOR,
    Fit,
    Layout,
    measured,
    measured_sides,
    reference_measured,
)
from coeval_analysis.stats.measurement_taste import taste_from_reference

__all__ = ["Scores", "reported_scale", "student_scores", "teacher_weights"]


@dataclass
class Scores:
    """Student quality on the reported scale, and how it was put on it."""

    score: np.ndarray  #: per student (NaN: not scored)
    num: np.ndarray  #: (items, S) numerator of the GLS deviation (theta units)
    den: np.ndarray  #: (items, S) information
    grand: float  #: theta units
    stretch: float  #: Lambda: reported = stretch * theta + shift
    shift: float
    info_share: np.ndarray  #: (S, K) share of each judge in each student's information
    bias_gradient: np.ndarray  #: (S, K) d score / d delta_j (reported units)
    taste_var: np.ndarray  #: (S,) variance of the score from the judges' taste (reported units)
    cell: np.ndarray  #: (items, S) GLS answer quality on the reported scale (NaN: none)
    item_weight: np.ndarray = field(default_factory=lambda: np.zeros(0))  #: per item, its teacher's weight


def teacher_weights(num: np.ndarray, den: np.ndarray, item_teacher: np.ndarray | None) -> np.ndarray:
    """Per item: its teacher's weight, floored at ``TEACHER_FLOOR``, so a teacher whose
    datapoints ignore quality counts little. The weight is the correlation across students
    between the student effects its datapoints give and those the other teachers' give,
    times the split-half reliability of its own student effects relative to the most
    reliable teacher's: with two teachers the correlation is the same for both, and only
    the reliability tells the one that separates students from the one that does not.
    Refitted with everything else in every bootstrap refit."""
    n_items = num.shape[0]
    out = np.ones(n_items)
    if item_teacher is None or len(item_teacher) != n_items:
        return out
    codes = np.unique(item_teacher[item_teacher >= 0])
    if len(codes) < 2 or num.shape[1] < 3:
        return out
    tn, td = num.sum(0), den.sum(0)
    agreement: dict[int, float] = {}
    reliability: dict[int, float] = {}
    for t in codes:
        mine = item_teacher == t
        n_t, d_t = num[mine].sum(0), den[mine].sum(0)
        ok = (d_t > 1e-12) & (td - d_t > 1e-12)
        if ok.sum() < 3:
            continue
        agreement[int(t)] = _correlation(n_t[ok] / d_t[ok], (tn - n_t)[ok] / (td - d_t)[ok])
        reliability[int(t)] = _split_half(num[mine], den[mine])
    top = max(reliability.values(), default=0.0)
    for t, r in agreement.items():
        relative = reliability[t] / top if top > 1e-12 else 1.0
        out[item_teacher == t] = max(r * relative, TEACHER_FLOOR)
    return out


def _correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation, 0 when either side does not vary."""
    if a.std() < 1e-12 or b.std() < 1e-12:
        return 0.0
    return float(np.corrcoef(a, b)[0, 1])


def _split_half(num: np.ndarray, den: np.ndarray) -> float:
    """Spearman-Brown reliability of the student effects of one teacher's datapoints, from
    the correlation of the effects its odd and its even datapoints give (1 when it has too
    few datapoints to split: nothing says it is unreliable)."""
    if num.shape[0] < 4:
        return 1.0
    halves = []
    for part in (slice(0, None, 2), slice(1, None, 2)):
        n, d = num[part].sum(0), den[part].sum(0)
        halves.append(np.where(d > 1e-12, n / np.where(d > 1e-12, d, 1.0), np.nan))
    ok = ~np.isnan(halves[0]) & ~np.isnan(halves[1])
    if ok.sum() < 3:
        return 1.0
    r = _correlation(halves[0][ok], halves[1][ok])
    return max(0.0, 2 * r / (1 + r)) if r > -1 else 0.0


def reported_scale(lay: Layout, f: Fit, on_reference: bool = True) -> tuple[float, float]:
    """(stretch, shift) taking theta to the scale of an average informative judge, or to
    the reference judge's (scale 1, location 0) when there is one the others can check
    (``on_reference=False``: never, as for a refit of a fit that did not measure it)."""
    if on_reference and reference_measured(lay, f.scale):
        return float(f.scale[-1]), float(f.location[-1])
    n = lay.seen.sum(0)
    info = np.where(n > 0, f.scale**2 / f.noise, 0.0)
    # the direction most measured judges agree on is "better": a single highly consistent
    # contrary judge must not turn the ranking upside down, so only the majority side counts
    pos, neg = measured_sides(lay, f)
    if pos.sum() != neg.sum():
        side = pos if pos.sum() > neg.sum() else neg
    else:
        side = pos if (info * f.scale).sum() >= 0 else neg
    if (info * side).sum() > 0:
        info = info * side
    if info.sum() <= 0:
        return 1.0, 0.0
    stretch = float((info * f.scale).sum() / info.sum())
    if abs(stretch) < 1e-12:
        return 1.0, 0.0
    shift = stretch * float((info * f.location).sum() / (info * f.scale).sum())
    return stretch, shift


_TINY = 1e-12


def student_scores(lay: Layout, f: Fit, w_judge: np.ndarray | None = None, on_reference: bool = True) -> Scores:
    """Each student's information-weighted quality relative to the datapoints' means
    (``on_reference``: see :func:`reported_scale`)."""
    S, n_items, K = lay.n_students, lay.n_items, lay.K
    wj = np.ones(K) if w_judge is None else w_judge
    seen, cf = lay.seen, lay.conflicted
    on = seen * wj
    g = on * (f.scale / f.noise)
    h = on * (f.scale**2 / f.noise)
    y = np.where(cf, lay.x - f.bias, lay.x)
    dev = np.where(seen, y - f.location - f.scale * f.mu[lay.cell_item][:, None], 0.0)
    taste = taste_from_reference(lay, f, dev) if on_reference else None
    if taste is not None:  # each judge's view of a labelled student, less its estimated taste
        dev = np.where(seen, dev - (f.scale * taste.shift)[lay.cell_student], 0.0)
    num_c, den_c = (g * dev).sum(1), h.sum(1)
    flat = lay.cell_item * S + lay.cell_student
    num = np.bincount(flat, num_c, n_items * S).reshape(n_items, S)
    den = np.bincount(flat, den_c, n_items * S).reshape(n_items, S)
    weight = teacher_weights(num, den, lay.item_teacher)
    num, den = num * weight[:, None], den * weight[:, None]
    has_item = np.bincount(lay.cell_item, minlength=n_items) > 0
    grand = float(f.mu[has_item].mean()) if has_item.any() else float("nan")
    stretch, shift = reported_scale(lay, f, on_reference)
    tn, td = num.sum(0), den.sum(0)
    ok = td > 1e-12
    theta = np.where(ok, grand + tn / np.where(ok, td, 1.0), np.nan)
    score = stretch * theta + shift
    # per student and judge: share of information, and how the score moves with each bias
    keyed = lay.student_judge_key
    h_sk = np.bincount(keyed, h.ravel(), S * K).reshape(S, K)
    g_sk = np.bincount(keyed, g.ravel(), S * K).reshape(S, K)
    gc_sk = np.bincount(keyed, (g * cf).ravel(), S * K).reshape(S, K)
    tds = np.where(ok, td, 1.0)[:, None]
    share = np.where(ok[:, None], h_sk / tds, 0.0)
    bias_grad = np.where(ok[:, None], -stretch * gc_sk / tds, 0.0)
    w = np.where(ok[:, None], g_sk / tds, 0.0)
    if taste is None:
        taste_var = stretch**2 * (w**2 * f.taste[None, :]).sum(1)
    else:  # what is left of each judge's taste, and the reference's noise that all corrections share
        u, k = w * f.scale[None, :], taste.gain
        prior = taste.prior
        left = u**2 * ((1.0 - k) ** 2 * prior + k**2 * taste.judge_var)
        unmeasured = w**2 * f.taste[None, :] * ~measured(f.scale)[None, :]
        common = (u * k * np.sqrt(taste.reference_var)).sum(1) ** 2
        taste_var = stretch**2 * (left.sum(1) + unmeasured.sum(1) + common)
        bias_grad = bias_grad * (1.0 - k)  # a corrected view no longer rests on the bias's estimate
    with np.errstate(invalid="ignore", divide="ignore"):
        cell = np.where(den > 1e-12, stretch * (f.mu[:, None] + num / den) + shift, np.nan)
    return Scores(score, num, den, grand, stretch, shift, share, bias_grad, taste_var, cell, weight)

