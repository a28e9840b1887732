"""The measurement model's parameters and data: constants, the judgments laid out as dense
(answers x judges) arrays, the fitted parameters (see :mod:`coeval_analysis.stats.measurement`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from coeval_analysis.stats.headline import Judgments

__all__ = ["TAU", "Fit", "Layout", "Reference", "layout_of", "measured", "measured_sides", "reference_measured"]

TAU = 0.10  #: prior standard deviation of a judge's bias toward its family (0-1 score scale)
NOISE_FLOOR = 1e-4  #: judge noise variance floor (a judge giving one level has noise 0)
V_FLOOR = 1e-6
TEACHER_FLOOR = 0.05  #: least weight of a teacher whose datapoints do not separate students like the others'
COMPETENT = 0.05  #: reliability from which an unrelated judge's view can measure a family bias
NOISE_SHARE = 0.05  #: a judge's noise variance is at least this share of its own within-datapoint variance
VERIFY = 0.05  #: share of the answers' quality the other judges must pin down to check a judge
LAMBDA_FLOOR = 1e-3  #: scale of a judge with no evidence of telling answers apart (theta units)
TASTE_FLOOR = 0.02  #: a judge's per-student taste is at least this (0-1 scale): 5 students cannot show less
MAX_ITER = 300
#: a judge starts reversed when its loading on the judges' principal axis is below minus this
#: share of the largest loading
CONTRARY_LOADING = 0.5
DAMP_AFTER = 0  #: rounds after which the scales and biases are damped (half old, half new)
#: rounds after which a fit still moving is damped harder: each round keeps ``SETTLE_KEEP``
#: of every parameter's last value (see ``measurement_fit._rounds``)
SETTLE_AFTER = 100
SETTLE_KEEP = 0.8
TOL = 1e-4
EPS = 1e-9


@dataclass(frozen=True)
class Reference:
    """Scores of a reference judge of known scale (human labels, gold answers): one per
    (datapoint code, student code), value in [0, 1]. It enters the fit as a judge with scale
    1, location 0 and no family, so it fixes the common scale and, where it grades a
    student, the student's place regardless of the LLM judges' family biases."""

    item: np.ndarray
    student: np.ndarray
    value: np.ndarray


@dataclass
class Layout:
    """Judgments as dense (answers x judges) arrays; the reference judge, if any, last."""

    x: np.ndarray  #: (C, K) mean score per answer and judge (0 where absent)
    seen: np.ndarray  #: (C, K) bool
    conflicted: np.ndarray  #: (C, K) bool
    cell_item: np.ndarray  #: (C,)
    cell_student: np.ndarray  #: (C,)
    n_items: int
    n_students: int
    n_judges: int  #: LLM judges (K, less the reference)
    has_reference: bool
    item_teacher: np.ndarray | None = None  #: teacher code per item (-1: unknown)

    @property
    def K(self) -> int:
        return self.n_judges + int(self.has_reference)

    @cached_property
    def item_judge_key(self) -> np.ndarray:
        """(C * K,) the (datapoint, judge) pair of each entry of the raveled (C, K) arrays,
        for bincounts; worked out once, not in every round of the fit."""
        return (self.cell_item[:, None] * self.K + np.arange(self.K)[None, :]).ravel()

    @cached_property
    def student_judge_key(self) -> np.ndarray:
        """(C * K,) the (student, judge) pair of each entry, as :attr:`item_judge_key`."""
        return (self.cell_student[:, None] * self.K + np.arange(self.K)[None, :]).ravel()


@dataclass
class Fit:
    """Parameters of the model (theta units) and what the headline reports."""

    location: np.ndarray  #: a_j (K)
    scale: np.ndarray  #: lambda_j (K)
    noise: np.ndarray  #: sigma_j^2 (K)
    bias: np.ndarray  #: delta_j (K)
    bias_var: np.ndarray  #: posterior variance of delta_j (K)
    bias_prior_share: np.ndarray  #: share of the prior in delta_j's posterior (1: no evidence)
    taste: np.ndarray  #: t_j^2 in score units (K)
    mu: np.ndarray  #: per item
    v: float
    converged: bool
    iterations: int
    n_fit: np.ndarray = field(default_factory=lambda: np.zeros(0))  #: judgments each judge's fit used
    #: per judge: whether other judges pin down enough of its answers' quality to check it
    checked: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))

    @property
    def reliability(self) -> np.ndarray:
        """Per judge: the share of its score variance within a datapoint that answer
        quality explains, ``lambda^2 v / (lambda^2 v + sigma^2)`` (0: a flat or pure-noise
        judge); free of the scale's units."""
        sv = self.scale**2 * self.v
        out: np.ndarray = sv / (sv + self.noise)
        return out


def layout_of(j: Judgments, reference: Reference | None = None) -> Layout:
    """Dense arrays of the usable judgments (one cell per answered (item, student))."""
    S, k = j.n_students, j.n_judges
    keep = ~np.isnan(j.value) & (j.item >= 0) & (j.student >= 0)
    cell = j.item[keep].astype(np.int64) * S + j.student[keep]
    judge = j.judge[keep].astype(np.int64)
    value = j.value[keep].astype(np.float64)
    conf = j.conflicted[keep]
    has_ref = reference is not None and len(reference.value) > 0
    if has_ref:
        assert reference is not None
        ok = ~np.isnan(reference.value) & (reference.item >= 0) & (reference.student >= 0)
        cell = np.concatenate([cell, reference.item[ok].astype(np.int64) * S + reference.student[ok]])
        judge = np.concatenate([judge, np.full(int(ok.sum()), k, np.int64)])
        value = np.concatenate([value, reference.value[ok].astype(np.float64)])
        conf = np.concatenate([conf, np.zeros(int(ok.sum()), bool)])
    K = k + int(has_ref)
    cells, inv = np.unique(cell, return_inverse=True)
    C = len(cells)
    key = inv * K + judge
    cnt = np.bincount(key, minlength=C * K).reshape(C, K)
    tot = np.bincount(key, value, C * K).reshape(C, K)
    cf = np.bincount(key, conf.astype(np.float64), C * K).reshape(C, K) > 0
    seen = cnt > 0
    x = np.where(seen, tot / np.maximum(cnt, 1), 0.0)
    return Layout(x, seen, cf & seen, cells // max(S, 1), cells % max(S, 1), j.n_items, S, k, has_ref,
                  np.asarray(j.item_teacher, np.int64))



def measured(scale: np.ndarray) -> np.ndarray:
    """Which judges have a measured scale (not the floor given to a judge without evidence;
    the floor moves with the rescaling of theta, usually by a few parts in a thousand, but
    a fit that rescales theta a lot in its last round leaves a floored judge further off:
    1.16 times the floor in seed 28 of ``family_top_contrary``'s undamped fit, which is
    why :func:`measured_sides` also asks for reliability)."""
    out: np.ndarray = np.abs(scale) > 1.01 * LAMBDA_FLOOR
    return out


def reference_measured(lay: Layout, scale: np.ndarray) -> bool:
    """Whether the run has a reference judge (human labels, gold: the last column) and
    ``scale`` measures it: only then are the scores reported in its units and the judges'
    tastes read from it."""
    return bool(lay.has_reference and measured(scale[-1:])[0])


def measured_sides(lay: Layout, f: Fit) -> tuple[np.ndarray, np.ndarray]:
    """(forward, reversed): the judges with a measured scale, reliability at least
    :data:`COMPETENT` and judgments that read quality one way, and those that read it the
    other. Which side has more decides which way is better (the reported scale of
    :func:`coeval_analysis.stats.measurement_scores.student_scores`, and whether the fit's
    restart settled it). A floored judge rescaled a little off the floor with theta passes
    as measured; counted as a side, one that is next to blind turned a tie into a majority
    and the whole ranking upside down."""
    ok = measured(f.scale) & (lay.seen.sum(0) > 0) & (f.reliability >= COMPETENT)
    return ok & (f.scale > 0), ok & (f.scale < 0)
