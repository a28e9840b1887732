"""A cold fit that ends with no judge measured restarts (``fit_measurement``).

On the reference run's shape (two GPT judges, a flat judge that grades nearly every answer
Medium, a contrary judge) one synthetic run in ten fell into the model's empty fixed point:
the first round, averaged with the equal start, gave the flat judge half a scale at its own
tiny noise, the most information of any judge; the next round's consensus then measured no
judge, and every student's rank range was 1 to 5. Seeds 4, 18, 28 and 29 of
``benchmarks.labels_in_loop.simulate_run`` did so without labels. Where two judges
contradict each other and nothing says which is right, the empty fit stays
(``tests/benchmarks/test_gold_reference.py``, without gold); a judge left at the floor
does not count as a side.
"""

from __future__ import annotations

import numpy as np
import pytest
from coeval_analysis.stats import measurement_fit
from coeval_analysis.stats.measurement import fit_all, layout_of, student_scores
from coeval_analysis.stats.measurement_model import MAX_ITER, TOL, measured
from coeval_analysis.stats.scenarios import SCENARIOS, simulate
from scipy.stats import spearmanr

from benchmarks.labels_in_loop import simulate_run


@pytest.mark.parametrize("seed", [4, 18, 28, 29])
def test_a_flat_judge_does_not_leave_the_fit_with_no_judge_measured(seed: int) -> None:
    lay = layout_of(simulate_run(seed).judgments)
    f = fit_all(lay)[0]
    gpt_4o, gpt_35, flat, contrary = f.scale
    assert measured(np.array([gpt_4o, gpt_35, contrary])).all()
    # theta's direction is the fit's own choice: the contrary judge is read against the others
    assert np.sign(gpt_4o) == np.sign(gpt_35) == -np.sign(contrary)
    assert abs(flat) < 0.3 * min(abs(gpt_4o), abs(gpt_35))  # and the flat one as nearly blind
    # and the scores come out the right way up: the three students unrelated judges place
    score = student_scores(lay, f).score
    assert score[2] > score[3] > score[4]


def test_a_fit_that_measures_judges_is_not_refitted() -> None:
    """Seed 0 never fell into the empty point: its fit is the first one, unchanged."""
    lay = layout_of(simulate_run(0).judgments)
    first = measurement_fit._rounds(
        lay, measurement_fit._start(lay), np.ones(lay.n_items), np.ones(lay.K), MAX_ITER, TOL, damp_first=True,
    )  # fmt: skip
    assert np.array_equal(measurement_fit.fit_measurement(lay).scale, first.scale)


def test_a_floored_judge_a_little_off_the_floor_does_not_block_the_restart() -> None:
    """Seed 28 of the ``family_top_contrary`` scenario (the GPT judges favour the two best
    students, the flat judge favours the worst, the contrary judge is weak). Its restart
    measures both GPT judges one way and the contrary judge the other, while the flat
    judge's floored scale is rescaled with theta to 1.16 times the floor. Counted as a
    measured judge, it tied the sides 2 to 2 and the empty fit was kept: every student's
    score equal but for noise, Spearman 0.93 with truth where the plain mean has 0.99."""
    sim = simulate(SCENARIOS["family_top_contrary"], 28)
    lay = layout_of(sim.judgments)
    f = fit_all(lay)[0]
    gpt_a, gpt_b, _, contrary = f.scale
    assert measured(np.array([gpt_a, gpt_b, contrary])).all()
    assert np.sign(gpt_a) == np.sign(gpt_b) == -np.sign(contrary)
    assert f.reliability[2] < 0.05  # the flat judge stays next to blind
    score = student_scores(lay, f).score
    assert spearmanr(score, sim.quality)[0] > 0.98
    assert list(np.argsort(-score)[:2]) == [9, 8]  # the favoured pair on top, in order


@pytest.mark.parametrize("seed", [0, 26])
def test_a_judge_that_ignores_difficulty_does_not_start_reversed(seed: int) -> None:
    """Seeds 0 and 26 of ``family_top_contrary``: the flat judge grades nearly every answer
    High, whatever the datapoint's difficulty. Read against the datapoints' common mean,
    which the other judges' difficulty moves, it loaded against them and started reversed
    beside the GPT judges; both fits, damped and not, then ended with no judge measured
    (Spearman 0.93 and 0.95, the plain mean 0.99)."""
    sim = simulate(SCENARIOS["family_top_contrary"], seed)
    lay = layout_of(sim.judgments)
    start = measurement_fit._start(lay)
    assert list(start.scale[:3]) == [1.0, 1.0, 1.0]  # GPT, GPT, flat (the contrary one is weak)
    f = fit_all(lay)[0]
    assert measured(f.scale[[0, 1, 3]]).all()
    score = student_scores(lay, f).score
    assert spearmanr(score, sim.quality)[0] > 0.98
