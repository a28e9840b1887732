"""What counts how much in the ranking an adaptive design refits: a teacher whose datapoints
do not tell the students apart counts for nothing, a judge with a taste for some students
counts less than the judges that follow the answers, and the fit weighs each datapoint by
its teacher's weight. The looks' weights are measured on the calibration slice, the reported
ranking's on everything bought."""

from __future__ import annotations

import numpy as np
import pytest
from coeval_analysis.adaptive.contrasts import AnswerScores, fit_intervals, judge_leniency
from coeval_analysis.adaptive.design import Design, dense, play, slice_weights, spread_order
from coeval_analysis.adaptive.weights import taste_discount, teacher_weights
from coeval_analysis.stats.scenarios import SCENARIOS, Scenario, simulate
from scipy.stats import t as student_t


def test_a_teacher_whose_datapoints_do_not_follow_the_students_counts_for_nothing() -> None:
    quality = np.array([0.3, 0.1, -0.1, -0.3])
    wobble = np.array([[0.02, -0.01, 0.0, -0.01], [-0.01, 0.02, -0.01, 0.0], [0.0, 0.0, 0.01, -0.01]])
    good = quality[None, :] + wobble  # teachers 0 and 1: three datapoints each, following quality
    flat = np.array([[0.1, -0.1, -0.1, 0.1], [0.2, -0.2, -0.2, 0.2], [-0.1, 0.1, 0.1, -0.1]])  # unrelated
    scores = np.vstack([good, good[::-1] + 0.5, flat + 0.5])
    item_teacher = np.repeat([0, 1, 2], 3)
    w = teacher_weights(scores, item_teacher)
    assert w[6:].tolist() == [0.0, 0.0, 0.0]
    assert w[0] == pytest.approx(w[3]) and w[0] > 0
    assert w.mean() == pytest.approx(1.0)  # mean 1 over the datapoints scored


def test_one_teacher_or_too_few_students_leaves_the_datapoints_alike() -> None:
    scores = np.array([[0.9, 0.5, 0.1], [0.7, 0.6, 0.2], [1.0, 0.4, 0.0]])
    assert teacher_weights(scores, np.array([0, 0, 0])).tolist() == [1.0, 1.0, 1.0]
    assert teacher_weights(scores, np.array([0, 1, 2])).tolist() == [1.0, 1.0, 1.0]  # 3 students: too few


def test_the_fit_weighs_each_datapoint_by_its_weight() -> None:
    y = np.array([[0.9, 0.5, 0.1], [0.7, 0.6, 0.2], [1.0, 0.4, 0.0], [0.1, 0.9, 0.5]])
    weight = np.array([1.0, 1.0, 2.0, 0.0])  # the last datapoint counts for nothing
    iv = fit_intervals(AnswerScores(y), alpha=0.05, item_weight=weight)
    d = y[:3, 0] - y[:3, 1]
    mean = float(np.average(d, weights=weight[:3]))
    assert iv.score[0] - iv.score[1] == pytest.approx(mean)
    # sandwich over the 3 weighted datapoints: sum (w (d - mean))^2 / (sum w)^2 * 3/2
    var = float(np.sum((weight[:3] * (d - mean)) ** 2)) / weight[:3].sum() ** 2 * 3 / 2
    half = student_t.ppf(0.975, 2) * np.sqrt(var)
    assert iv.diff_low[0, 1] == pytest.approx(mean - half)
    assert iv.diff_high[0, 1] == pytest.approx(mean + half)


def test_a_judge_that_follows_the_answers_keeps_its_weight_and_a_judge_with_a_taste_loses_it() -> None:
    rng = np.random.default_rng(0)
    quality = np.linspace(-0.2, 0.2, 8)
    items = rng.normal(0.0, 0.05, (12, 8))
    base = quality[None, :] + items
    taste = np.array([0.2, -0.2, 0.15, -0.15, 0.2, -0.2, 0.15, -0.15])
    judges = np.stack([base + rng.normal(0, 0.03, base.shape) for _ in range(3)]
                      + [base + taste[None, :] + rng.normal(0, 0.03, base.shape)])
    centred = judges - judges.mean(axis=2, keepdims=True)
    factor = taste_discount(centred, np.ones(4))
    assert factor[:3].min() > 0.5
    assert factor[3] < 0.1 * factor[:3].min()
    assert factor.max() == 1.0


def test_on_a_bad_teacher_the_design_sets_its_datapoints_aside() -> None:
    for seed in range(3):
        sim = simulate(SCENARIOS["bad_teacher"], seed)
        outcome = play(sim.judgments, sim.judges, Design(), seed)
        teacher = sim.judgments.item_teacher
        per_teacher = [float(outcome.item_weight[teacher == t].mean()) for t in range(3)]
        assert per_teacher[2] < 0.25 * min(per_teacher[:2])


def test_a_judge_with_a_taste_for_some_students_weighs_less_than_the_others() -> None:
    sc = Scenario("taste", judge_noise=(0.1, 0.1, 0.1, 0.1), taste_sd={3: 0.15})
    for seed in range(3):
        sim = simulate(sc, seed)
        outcome = play(sim.judgments, sim.judges, Design(), seed)
        # the looks' weights, measured on the calibration slice
        j = sim.judgments
        order = spread_order(j.item_teacher, np.random.default_rng([seed, 5252]))
        in_slice = np.isin(np.arange(j.n_items), order[: outcome.looks[0].datapoints])
        x, conflicted = dense(j)
        calib = np.where(in_slice[None, :, None], x, np.nan)
        kept = np.array(outcome.kept)
        on_slice, _ = slice_weights(calib, conflicted, kept, judge_leniency(calib, kept), sim.judgments.item_teacher)
        assert on_slice[3] < 0.5 * on_slice[:3].min()
        # and the reported ranking's, refit on everything bought
        assert outcome.weight[3] < outcome.weight[:3].min()
