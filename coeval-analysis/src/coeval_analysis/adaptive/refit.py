"""The ranking an adaptive design reports where it ends: its weights refit on everything bought.

The looks weigh the judges, their leniencies and the teachers as measured on the calibration
slice, and keep those weights fixed, so that every look estimates the same thing and the
stopping rule's intervals stay valid. Where the design ends (its question answered, or the
datapoints spent), the ranking it reports is refit with weights measured on every judgment it
bought, the slice's and every later round's. The slice alone is a third of the datapoints: its
weights are noisy enough to decide a near-tie, which the design keeps open to the last
datapoint, the other way from the full grid.

* The judges' weights are the headline's: its measurement model
  (:mod:`coeval_analysis.stats.measurement`) fit on the kept judges' judgments, each judge
  weighing ``scale / noise variance`` (least squares for ``scale * quality + noise``). The
  model fits each answer's quality, so the later rounds, answered by the contenders only,
  measure a judge's noise as well as the slice does; a correlation within datapoints, as
  on the slice, would read the contenders' small spread as the judges agreeing less.
* A judge with a steady taste for some students (a bias per student, the same on every
  datapoint) is read by that model as a sharp judge, the taste taken for the students'
  quality: where its per-student means stray from the other judges' far more than chance
  makes them (:func:`~coeval_analysis.adaptive.weights.taste_discount` under
  :data:`STRONG_TASTE`), its weight is cut by that discount. Without the cut, the reference run's shape played on
  the mock (a kept judge biased against the better students) put the best student first
  in 52 seeds of 100 against the full run's 59.
* Leniencies are measured on the answers no kept judge is conflicted on.
* The teachers' weights as on the slice, from the answer scores of everything bought.
"""

from __future__ import annotations

import warnings

import attrs
import numpy as np

from coeval_analysis.adaptive.contrasts import answer_scores, dense, fit_intervals, judge_leniency
from coeval_analysis.adaptive.stopping import Intervals
from coeval_analysis.adaptive.weights import datapoint_deviations, taste_discount, teacher_weights
from coeval_analysis.stats.headline import Judgments

__all__ = ["STRONG_TASTE", "Refit", "model_weights", "refit"]

#: a taste discount under this cuts a judge's weight in the reported ranking; above it the
#: discount is noise (judges of the bench's decent scenario read 0.35 to 1 on their own)
STRONG_TASTE = 0.25


@attrs.frozen
class Refit:
    """The reported ranking and the weights it was fit with."""

    intervals: Intervals
    leniency: np.ndarray  #: per judge
    weight: np.ndarray  #: per judge (0: not kept)
    item_weight: np.ndarray  #: per datapoint, its teacher's


def model_weights(bought: Judgments, kept: np.ndarray) -> np.ndarray:
    """Per judge, ``max(scale, 0) / noise variance`` of the measurement model fit on the
    ``kept`` judges' rows of ``bought`` (0 for the others); the rows are put in one order
    first, so the weights do not hang on the order the records came in."""
    from coeval_analysis.stats.measurement import fit_all, layout_of

    out = np.zeros(bought.n_judges)
    rows = np.isin(bought.judge, kept) & ~np.isnan(bought.value)
    if kept.size < 2 or not rows.any():
        out[kept] = 1.0
        return out
    order = np.flatnonzero(rows)[np.lexsort((bought.judge[rows], bought.student[rows], bought.item[rows]))]
    mine = Judgments(bought.item[order], bought.student[order], bought.judge[order], bought.value[order],
                     bought.conflicted[order], bought.n_items, bought.n_students, bought.n_judges,
                     bought.item_teacher)  # fmt: skip
    with warnings.catch_warnings():  # a judge that gives one level has no variance to fit
        warnings.simplefilter("ignore", RuntimeWarning)
        fit = fit_all(layout_of(mine))[0]
        w = np.maximum(fit.scale[kept], 0.0) / np.maximum(fit.noise[kept], 1e-9)
    out[kept] = np.nan_to_num(w, nan=0.0, posinf=0.0)
    return out


def refit(bought: Judgments, kept: np.ndarray, alpha: float, weighted: bool = True) -> Refit:
    """The ranking of everything ``bought`` by the ``kept`` judges (codes), at level ``1 - alpha``;
    ``weighted`` False: every judge and datapoint alike."""
    x, conflicted = dense(bought)
    leniency = judge_leniency(x, kept, conflicted)
    weight = model_weights(bought, kept) if weighted else np.ones(bought.n_judges)
    if weighted:
        taste = taste_discount(datapoint_deviations(x, conflicted), weight)
        weight = weight * np.where(taste < STRONG_TASTE, taste, 1.0)
    if not (weight[kept] > 0).any():  # no kept judge follows the answers: all count alike
        weight = np.ones(bought.n_judges)
    scores = answer_scores(x, conflicted, kept, leniency, weight)
    item_weight = teacher_weights(scores.value, bought.item_teacher) if weighted else np.ones(bought.n_items)
    return Refit(fit_intervals(scores, alpha, item_weight), leniency, weight, item_weight)
