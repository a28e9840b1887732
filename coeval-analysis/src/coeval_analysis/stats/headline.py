"""What the headline is fitted on and what the fit reports about judges and datapoints.

:class:`Judgments`: one row per *judgment*, a judge's score (its rubric-weighted mean over
the judged factors) of one student's answer to one datapoint, with a flag for conflicted
judgments (the judge grades its own answer or an answer of its family, see
:mod:`coeval_analysis.ranking.families`). :class:`Headline`: the judge weights and leniencies, the
datapoint weights and each student's headline score (see :mod:`coeval_analysis.ranking.headline`,
which fills it from the measurement model of :mod:`coeval_analysis.stats.measurement`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Headline", "Judgments"]


@dataclass(frozen=True)
class Judgments:
    """One row per (item, student, judge) judgment; ``conflicted``: judge and student share a family."""

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
