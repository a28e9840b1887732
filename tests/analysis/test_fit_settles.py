"""A fit that goes round a cycle settles (``measurement_fit._rounds``, ``SETTLE_AFTER``).

On the reference run's shape (two GPT judges, a flat judge, a contrary judge), some fits
never converged: they went round a cycle of states in which a judge's noise fell to almost
nothing and it outvoted the rest for a round, and ended on whichever state the last round
gave. Without labels that was seed 6's ranking nearly unrelated to the truth (Spearman
-0.1); with 40 random labels, the labels left at the floor, as if there were none.
Damped harder after ``SETTLE_AFTER`` rounds, the fits converge.
"""

from __future__ import annotations

import numpy as np
import pytest
from coeval_analysis.stats.measurement import Reference, fit_all, layout_of, student_scores
from coeval_analysis.stats.measurement_model import MAX_ITER, measured

from benchmarks.labels_in_loop import random_picks, simulate_labels, simulate_run

TRUE_ORDER = [0, 1, 2, 3, 4]  #: simulate_run's students, best first


@pytest.mark.parametrize("seed", [6, 16, 34, 35])
def test_a_fit_without_labels_converges_to_the_true_order(seed: int) -> None:
    lay = layout_of(simulate_run(seed).judgments)
    f = fit_all(lay)[0]
    assert f.converged and f.iterations < MAX_ITER
    assert list(np.argsort(-student_scores(lay, f).score)) == TRUE_ORDER


@pytest.mark.parametrize("seed", [6, 27])
def test_forty_random_labels_are_measured_once_the_fit_converges(seed: int) -> None:
    run = simulate_run(seed)
    picks = random_picks(run, 40, np.random.default_rng(10_000 + seed))
    labels = simulate_labels(run.latent, picks, np.random.default_rng(20_000 + seed))
    p = np.array(picks)
    lay = layout_of(run.judgments, Reference(p[:, 0], p[:, 1], labels))
    f = fit_all(lay)[0]
    assert f.converged
    assert measured(f.scale[-1:])[0]  # the labels' scale: the scores are reported in it
    assert list(np.argsort(-student_scores(lay, f).score)) == TRUE_ORDER
