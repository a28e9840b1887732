"""The ranking an adaptive design reports where it ends is refit on everything it bought: the
judges' weights, their leniencies and the teachers' weights come from every judgment, not
from the calibration slice alone; the looks' stopping decisions keep the slice's weights."""

from __future__ import annotations

import numpy as np
import pytest
from coeval_analysis.adaptive.contrasts import judge_leniency
from coeval_analysis.adaptive.design import Design, dense, look_sizes, play, slice_weights, spread_order
from coeval_analysis.adaptive.refit import STRONG_TASTE, model_weights, refit
from coeval_analysis.stats.headline import Judgments
from coeval_analysis.stats.scenarios import SCENARIOS, simulate

from benchmarks.ranking_accuracy import headline


def _slice_of(j: Judgments, seed: int) -> np.ndarray:
    order = spread_order(j.item_teacher, np.random.default_rng([seed, 5252]))
    return order[: look_sizes(j.n_items, Design())[0]]


def test_a_judge_that_stops_following_the_answers_after_the_slice_loses_its_weight() -> None:
    sim = simulate(SCENARIOS["decent"], 0)
    j = sim.judgments
    in_slice = np.isin(j.item, _slice_of(j, 0))
    # the sharpest judge guesses a level on every datapoint after the slice
    guess = np.random.default_rng(1).choice([0.0, 0.5, 1.0], j.value.size)
    value = np.where((j.judge == 0) & ~in_slice, guess, j.value)
    grid = Judgments(j.item, j.student, j.judge, value, j.conflicted, j.n_items, j.n_students, j.n_judges,
                     j.item_teacher)
    outcome = play(grid, sim.judges, Design(), 0)
    assert outcome.kept == (0, 1, 2, 3)  # screening saw only the slice, where judge 0 is the sharpest
    x, conflicted = dense(grid)
    calib = np.where(np.isin(np.arange(j.n_items), _slice_of(j, 0))[None, :, None], x, np.nan)
    kept = np.arange(4)
    on_slice, _ = slice_weights(calib, conflicted, kept, judge_leniency(calib, kept), j.item_teacher)
    assert on_slice[0] == on_slice.max()  # the looks weigh it most
    assert outcome.weight[0] < outcome.weight[1:].min()  # the reported ranking, least


def test_a_near_tie_kept_open_to_the_last_datapoint_is_ranked_with_the_weights_of_everything_bought() -> None:
    # decent, seed 0: students 9 and 5 stay open to the end, 9 ahead by 0.007 on the 0-1 scale
    sim = simulate(SCENARIOS["decent"], 0)
    outcome = play(sim.judgments, sim.judges, Design(), 0)
    assert not outcome.answered and outcome.looks[-1].open == (5, 9)
    assert int(np.argmax(sim.quality)) == 9
    assert int(np.nanargmax(headline(sim.judgments))) == 9  # the full grid finds it
    assert int(np.nanargmax(outcome.look_intervals.score)) == 5  # the slice's weights did not
    assert int(np.nanargmax(outcome.intervals.score)) == 9


def test_the_stopping_look_keeps_the_intervals_it_decided_on() -> None:
    sim = simulate(SCENARIOS["family_top_flat"], 2)
    outcome = play(sim.judgments, sim.judges, Design(), 2)
    assert outcome.answered
    look = outcome.look_intervals
    # the question was answered on the look's intervals: its first place is above every other
    first = int(np.nanargmax(look.score))
    assert (look.diff_low[first, np.arange(10) != first] > 0).all()
    assert int(np.nanargmax(outcome.intervals.score)) == first


def test_a_judge_favouring_a_student_does_not_shift_the_others_leniency() -> None:
    rng = np.random.default_rng(0)
    base = rng.uniform(0.2, 0.8, (6, 4))
    shift = np.array([0.1, 0.0, -0.1])
    x = base[None] + shift[:, None, None]
    conflicted = np.zeros(x.shape, bool)
    x[0, :, 0] += 0.3  # judge 0 favours student 0, of its own family
    conflicted[0, :, 0] = True
    kept = np.arange(3)
    assert judge_leniency(x, kept, conflicted) == pytest.approx(shift)
    assert judge_leniency(x, kept)[1] == pytest.approx(-0.025)  # counted, the favour moves the centre


def test_the_reported_ranking_is_not_moved_by_a_family_judge_favouring_its_student() -> None:
    # every judge sees the same answers, shifted by its leniency; judges 0 and 1 share
    # student 0's family and add 0.3 to its answers, judge 2 is unrelated
    rng = np.random.default_rng(3)
    student = np.array([0.1, 0.3, 0.0, -0.2, -0.1, 0.2])
    datapoint = rng.normal(0.5, 0.1, 12)
    base = datapoint[:, None] + student[None, :] + rng.normal(0, 0.02, (12, 6))
    shift = np.array([0.05, -0.05, 0.0])
    judge, item, who = np.meshgrid(np.arange(3), np.arange(12), np.arange(6), indexing="ij")
    value = base[item, who] + shift[judge] + rng.normal(0, 0.01, judge.shape)
    conflicted = (judge < 2) & (who == 0)
    value = value + 0.3 * conflicted
    grid = Judgments(item.ravel(), who.ravel(), judge.ravel(), value.ravel(), conflicted.ravel(), 12, 6, 3,
                     np.repeat([0, 1], 6))
    reported = refit(grid, np.arange(3), alpha=0.05)
    assert reported.leniency == pytest.approx(shift - shift.mean(), abs=0.01)
    # student 0 is placed by judge 2 alone, against the others as every judge places them
    score = reported.intervals.score
    expected = base.mean(0) - base.mean()
    assert score - score.mean() == pytest.approx(expected - expected.mean(), abs=0.01)
    assert int(np.argmax(score)) == 1


def _with_taste(j: Judgments, judge: int, bias: np.ndarray) -> Judgments:
    """``j`` with ``judge``'s every score of student s moved by ``bias[s]`` (kept in 0..1)."""
    value = np.where(j.judge == judge, np.clip(j.value + bias[j.student], 0.0, 1.0), j.value)
    return Judgments(j.item, j.student, j.judge, value, j.conflicted, j.n_items, j.n_students, j.n_judges,
                     j.item_teacher)


def test_a_kept_judge_biased_against_the_better_students_is_cut_in_the_reported_ranking() -> None:
    """A judge that reads each answer faithfully but marks every student by a bias against its
    quality (as the mock plays the reference run's contrary judge) looks sharp to the
    measurement model, which takes the bias for the students' quality; its weight is cut."""
    sim = simulate(SCENARIOS["decent"], 3)
    kept = np.arange(4)
    bias = -0.8 * (sim.quality - sim.quality.mean()) / sim.quality.std() * 0.15
    plain = refit(sim.judgments, kept, 0.05)
    biased = refit(_with_taste(sim.judgments, 3, bias), kept, 0.05)
    assert plain.weight[3] == pytest.approx(model_weights(sim.judgments, kept)[3])  # chance strays: no cut
    assert biased.weight[3] < STRONG_TASTE * np.median(biased.weight[:3])
    assert int(np.nanargmax(biased.intervals.score)) == int(np.argmax(sim.quality))
