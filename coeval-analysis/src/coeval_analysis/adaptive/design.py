"""Play an adaptive design over a grid of judgments drawn in advance, buying only what it asks for.

The datapoints are taken in a random order spread over teachers (each look's datapoints are a
random sample, which the intervals assume; choosing datapoints by what was seen on them would
make them a biased one). The first ``calibration`` share of them is the calibration slice:
every student answers, every judge grades, and :func:`~coeval_analysis.adaptive.screening.screen_judges`
stops the judges that tell answers apart too little; they are bought no more. After each look
the design stops when its question is answered (:mod:`~coeval_analysis.adaptive.stopping`);
otherwise the next round's datapoints are answered only by the students still open and graded
by the kept judges: (student, judge) pairs that cannot change the answer are not bought.
Where the design stops, the ranking it reports is refit with the weights of everything it
bought (:mod:`~coeval_analysis.adaptive.refit`); the looks keep the slice's weights.

A grid drawn in advance plays exactly like a mock run: a cell is read only once bought.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import attrs
import numpy as np

from coeval_analysis.adaptive.contrasts import (
    answer_scores,
    dense,
    fit_intervals,
    judge_leniency,
    judge_weights,
)
from coeval_analysis.adaptive.refit import refit
from coeval_analysis.adaptive.screening import Screening, agreement, screen_judges
from coeval_analysis.adaptive.stopping import (
    Intervals,
    Spending,
    StopRule,
    answered,
    look_alphas,
    open_students,
)
from coeval_analysis.adaptive.weights import datapoint_deviations, taste_discount, teacher_weights
from coeval_analysis.stats.headline import Judgments

__all__ = ["Design", "Look", "Outcome", "calibration_weights", "dense", "look_sizes", "play", "slice_weights", "subset"]


@attrs.frozen
class Design:
    """What a design asks and how it spends."""

    stop_when: StopRule = attrs.field(factory=lambda: StopRule("top"))
    looks: int = 6  #: looks at the data, the calibration slice's included
    calibration: float = 0.30  #: share of the datapoints in the calibration slice
    min_calibration: int = 8  #: its floor in datapoints
    alpha: float = 0.05  #: a pair's interval misses its value at the stopping look at most this often
    spending: Spending = "bonferroni"
    screen: bool = True  #: stop uninformative judges after the calibration slice
    focus: bool = True  #: after the slice, answer and grade only the open students (False: all)
    weighted: bool = True  #: weigh judges by their agreement on the slice (False: equally)
    #: share of each later round that the students let go still answer (their order among
    #: themselves keeps improving; 0: none)
    let_go_share: float = 0.0


@attrs.frozen
class Look:
    """One look: how much was seen, at what level, and what was decided."""

    datapoints: int
    alpha: float
    judgments: int  #: bought so far
    open: tuple[int, ...]  #: students still open after this look
    answered: bool


@attrs.frozen
class Outcome:
    """What the design bought and what it concluded at the look where it stopped."""

    #: the reported ranking: refit where the design stopped with the weights of everything
    #: bought (:func:`~coeval_analysis.adaptive.refit.refit`), at the stopping look's level
    intervals: Intervals
    look_intervals: Intervals  #: the stopping look's, with the slice's weights: what it decided on
    alpha: float  #: the level of ``intervals`` (its look's share of the error)
    looks: tuple[Look, ...]
    answered: bool  #: False: it ran out of datapoints first
    judgments: int  #: bought (phase-5 calls)
    judgments_full: int  #: what the full grid buys
    answers: int  #: student answers bought (phase-4 calls)
    answers_full: int
    kept: tuple[int, ...]  #: judge codes still bought after the calibration slice
    leniency: np.ndarray  #: per judge, in the reported ranking (measured on everything bought)
    weight: np.ndarray  #: per judge, its weight in an answer's score (the same)
    item_weight: np.ndarray  #: per datapoint, its weight in the fit: its teacher's (the same)
    screening: Screening | None
    bought: Judgments  #: the rows bought, for a final refit

    @property
    def saved(self) -> float:
        return 1.0 - self.judgments / self.judgments_full if self.judgments_full else 0.0


def subset(j: Judgments, keep: np.ndarray) -> Judgments:
    """The rows of ``j`` where ``keep`` holds, codes unchanged."""
    return Judgments(j.item[keep], j.student[keep], j.judge[keep], j.value[keep], j.conflicted[keep],
                     j.n_items, j.n_students, j.n_judges, j.item_teacher)  # fmt: skip


def spread_order(item_teacher: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random order of the datapoints in which every teacher's come evenly spread."""
    n = item_teacher.size
    key = np.empty(n)
    for t in np.unique(item_teacher):
        mine = np.flatnonzero(item_teacher == t)
        key[mine] = (rng.permutation(mine.size) + rng.uniform(0, 1, mine.size)) / mine.size
    return np.argsort(key, kind="stable")


def calibration_weights(calib: np.ndarray, conflicted: np.ndarray | None = None) -> np.ndarray:
    """Per judge, from the slice's (judges, datapoints, students) scores: its agreement with
    the other judges' consensus and its spread within a datapoint make its weight, cut where
    its per-student means disagree with the others' persistently (a taste; ``conflicted``
    scores, of its own family's students, left out of that)."""
    centred = datapoint_deviations(calib)
    with warnings.catch_warnings():  # datapoints outside the slice have no scores
        warnings.simplefilter("ignore", RuntimeWarning)
        spread = np.sqrt(np.nanmean(centred**2, axis=(1, 2)))
    items = (~np.isnan(centred)).any(axis=(0, 2)).astype(float)
    r = agreement(centred, items)
    weight = judge_weights(r, np.nan_to_num(spread))
    clean = centred if conflicted is None else np.where(conflicted, np.nan, centred)
    out: np.ndarray = weight * taste_discount(clean, weight)
    return out


def slice_weights(calib: np.ndarray, conflicted: np.ndarray, kept: np.ndarray, leniency: np.ndarray,
                  item_teacher: np.ndarray, weighted: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(per judge, per datapoint) weights of the ranking, from the calibration slice ``calib``
    (judges, datapoints, students; NaN outside it): the judges' by
    :func:`calibration_weights` (all alike when none kept agrees, or not ``weighted``), the
    datapoints' by their teacher (:func:`~coeval_analysis.adaptive.weights.teacher_weights`)."""
    n_judges = calib.shape[0]
    weight = calibration_weights(calib, conflicted) if weighted else np.ones(n_judges)
    if not (weight[kept] > 0).any():  # no kept judge agrees with the others: all count alike
        weight = np.ones(n_judges)
    if not weighted:
        return weight, np.ones(calib.shape[1])
    scores = answer_scores(calib, conflicted, kept, leniency, weight).value
    return weight, teacher_weights(scores, item_teacher)


def look_sizes(n_items: int, design: Design) -> np.ndarray:
    """Datapoints seen at each look: the calibration slice, then equal rounds up to all."""
    if design.looks <= 1:  # one look: the full grid
        return np.array([n_items])
    first = min(n_items, max(design.min_calibration, math.ceil(design.calibration * n_items)))
    sizes = np.unique(np.round(np.linspace(first, n_items, max(design.looks, 1))).astype(int))
    return sizes


def play(j: Judgments, judges: Sequence[str], design: Design, seed: int) -> Outcome:
    """Run ``design`` over the full grid ``j`` (judge codes named by ``judges``), buying rounds
    until its question is answered or the datapoints run out."""
    rng = np.random.default_rng([seed, 5252])
    x, conflicted = dense(j)
    answerable = ~np.isnan(x).all(0)  # (datapoints, students): the student's answer was graded
    order = spread_order(j.item_teacher, rng)
    sizes = look_sizes(j.n_items, design)
    alphas = look_alphas(design.alpha, sizes / j.n_items, design.spending)
    bought = np.zeros(x.shape, bool)
    answered_cells = np.zeros(answerable.shape, bool)
    slice_items = order[: sizes[0]]
    bought[:, slice_items, :] = True
    answered_cells[slice_items, :] = True
    in_slice = np.isin(j.item, slice_items)
    screening = None
    stopped: list[int] = []
    if design.screen and j.n_judges >= 3:
        screening = screen_judges(subset(j, in_slice), judges, seed=seed)
        stopped = [judges.index(n) for n in screening.stopped]
    kept = np.array([k for k in range(j.n_judges) if k not in stopped], int)
    calib = np.where(bought, x, np.nan)
    leniency = judge_leniency(calib, kept)
    weight, item_weight = slice_weights(calib, conflicted, kept, leniency, j.item_teacher, design.weighted)
    looks: list[Look] = []
    done = False
    iv = None
    for k, size in enumerate(sizes):
        seen = np.where(bought, x, np.nan)
        iv = fit_intervals(answer_scores(seen, conflicted, kept, leniency, weight), float(alphas[k]), item_weight)
        done = answered(design.stop_when, iv)
        still = open_students(design.stop_when, iv) if design.focus else np.ones(j.n_students, bool)
        looks.append(Look(int(size), float(alphas[k]), int((bought & ~np.isnan(x)).sum()),
                          tuple(int(s) for s in np.flatnonzero(still)), done))  # fmt: skip
        if done or k + 1 == len(sizes):
            break
        chunk = order[size : sizes[k + 1]]
        students = np.flatnonzero(still)
        bought[np.ix_(kept, chunk, students)] = True
        answered_cells[np.ix_(chunk, students)] = True
        thin = chunk[: round(design.let_go_share * chunk.size)]  # the chunk is in random order
        let_go = np.flatnonzero(~still)
        bought[np.ix_(kept, thin, let_go)] = True
        answered_cells[np.ix_(thin, let_go)] = True
    assert iv is not None
    graded = bought & ~np.isnan(x)
    got = subset(j, graded[j.judge, j.item, j.student])
    final = refit(got, kept, looks[-1].alpha, design.weighted)
    return Outcome(
        intervals=final.intervals, look_intervals=iv, alpha=looks[-1].alpha, looks=tuple(looks), answered=done,
        judgments=int(graded.sum()), judgments_full=int(j.value.size),
        answers=int((answered_cells & answerable).sum()), answers_full=int(answerable.sum()),
        kept=tuple(int(k) for k in kept), leniency=final.leniency, weight=final.weight,
        item_weight=final.item_weight, screening=screening, bought=got,
    )  # fmt: skip
