"""The headline's measurement model: a congeneric one-factor model of the judges.

A judge ``j`` scoring answer ``c`` (one student's answer to one datapoint) gives

    x = a_j + lambda_j * theta_c + delta_j * [conflicted] + taste_js + e,   e ~ N(0, sigma_j^2)

with ``a_j`` its location (leniency), ``lambda_j`` its scale (how strongly its scores move
with answer quality: near 0 for a flat judge, negative for a contrary one), ``sigma_j`` its
noise, ``delta_j`` its bias on answers of its own family (conflicted judgments) and
``taste_js`` a per-student taste of spread ``t_j`` that no number of datapoints averages
away. ``theta_c`` has a prior N(mu_i, v) around its datapoint's mean.

**Fit** (alternating, vectorised over a dense answers x judges array):

* the posterior of every ``theta_c`` given the judges (E-step);
* each judge's ``a, lambda, sigma`` by regressing its *non-conflicted* scores on the
  posterior of ``theta`` given the *other* judges only (regression calibration: unbiased
  for a Gaussian factor, and a judge's own scores never vouch for it), on answers that
  other judges also graded;
* each judge's ``delta`` from its conflicted scores against the consensus of the judges
  unrelated to the student, per student, with each student's estimate as uncertain as the
  unrelated judges' information and taste make it, shrunk by the prior N(0, TAU^2):
  estimated where competent unrelated judges grade the same answers, near 0 with the
  prior's spread where none does;
* ``mu_i`` and ``v`` from the posterior.

**Student quality** is the generalised-least-squares mean of its answers' ``theta``
relative to the datapoints' means: each judgment counts in proportion to its judge's
information ``lambda^2 / sigma^2``, so a flat judge counts for nearly nothing however
consistent it is, and a contrary judge's scores count reversed. Reported on the 0-1 scale
of an average informative judge (information-weighted scale 1, location 0), or of the
reference judge when one is given.

Chosen over the earlier correlation-weighted consensus and a leniency-only correction by
measurement on :mod:`coeval_analysis.stats.scenarios` (``python -m benchmarks.ranking_accuracy``,
docs/analysis.md).

The code is split by job: :mod:`~coeval_analysis.stats.measurement_model` (constants,
data, parameters), :mod:`~coeval_analysis.stats.measurement_fit` (the fit),
:mod:`~coeval_analysis.stats.measurement_scores` (student quality and its scale),
:mod:`~coeval_analysis.stats.measurement_taste` (each judge's taste measured against the
labels, and its spread where they grade several students) and
:mod:`~coeval_analysis.stats.measurement_bootstrap` (the refitting bootstrap); this module
gathers their public names.
"""

from __future__ import annotations

from coeval_analysis.stats.measurement_bootstrap import Replicates, bootstrap, info_share
from coeval_analysis.stats.measurement_fit import FIT_CELLS, fit_all, fit_measurement, item_means, subsample
from coeval_analysis.stats.measurement_model import (
    LAMBDA_FLOOR,
    TAU,
    Fit,
    Layout,
    Reference,
    layout_of,
    measured,
    reference_measured,
)
from coeval_analysis.stats.measurement_scores import Scores, student_scores, teacher_weights

__all__ = [
    "FIT_CELLS",
    "LAMBDA_FLOOR",
    "TAU",
    "Fit",
    "Layout",
    "Reference",
    "Replicates",
    "Scores",
    "bootstrap",
    "fit_all",
    "fit_measurement",
    "info_share",
    "item_means",
    "layout_of",
    "measured",
    "reference_measured",
    "student_scores",
    "subsample",
    "teacher_weights",
]
