"""Adaptive evaluation's sequential stopping: each question is answered when, and only when,
its intervals say so; the intervals stay honest under optional stopping; a design whose
students differ clearly stops after its calibration slice; ties are never called separated;
only the open students and the kept judges are bought after the slice."""

from __future__ import annotations

import numpy as np
import pytest
from coeval_analysis.adaptive.contrasts import AnswerScores, fit_intervals
from coeval_analysis.adaptive.design import Design, look_sizes, play
from coeval_analysis.adaptive.stopping import (
    Intervals,
    StopRule,
    answered,
    look_alphas,
    open_students,
    parse_stop_rule,
)
from coeval_analysis.stats.headline import Judgments
from coeval_analysis.stats.scenarios import NOISE_ONLY, SCENARIOS, Scenario, simulate
from scipy.stats import t as student_t

from benchmarks.adaptive import REFERENCE_FIVE, expected_differences


def _intervals(score: list[float], pairs: dict[tuple[int, int], tuple[float, float]],
               width: float = 0.1) -> Intervals:
    """Intervals with the given pair intervals of a - b (the reverse mirrored); unnamed
    pairs straddle 0 widely."""
    n = len(score)
    lo, hi = np.full((n, n), -1.0), np.full((n, n), 1.0)
    np.fill_diagonal(lo, 0.0)
    np.fill_diagonal(hi, 0.0)
    for (a, b), (low, high) in pairs.items():
        lo[a, b], hi[a, b] = low, high
        lo[b, a], hi[b, a] = -high, -low
    s = np.array(score)
    return Intervals(s, s - width / 2, s + width / 2, lo, hi)


def test_top_1_is_answered_when_one_student_is_above_every_other() -> None:
    rule = StopRule("top")
    iv = _intervals([0.3, 0.1, -0.4], {(0, 1): (0.05, 0.35), (0, 2): (0.5, 0.9)})
    assert answered(rule, iv)
    assert open_students(rule, iv).tolist() == [False, False, False]


def test_top_1_stays_open_while_the_second_may_be_first() -> None:
    rule = StopRule("top")
    iv = _intervals([0.3, 0.25, -0.4], {(0, 1): (-0.02, 0.12), (0, 2): (0.5, 0.9), (1, 2): (0.4, 0.9)})
    assert not answered(rule, iv)
    # the third is below both: let go; the first two are still bought
    assert open_students(rule, iv).tolist() == [True, True, False]


def test_top_2_needs_each_of_the_two_above_each_of_the_rest() -> None:
    rule = StopRule("top", k=2)
    sure = {(0, 2): (0.1, 0.3), (0, 3): (0.1, 0.3), (1, 2): (0.02, 0.2), (1, 3): (0.1, 0.3)}
    # the first two are not separated from each other: top 2 does not ask that
    iv = _intervals([0.3, 0.25, 0.1, 0.0], {**sure, (0, 1): (-0.1, 0.2)})
    assert answered(rule, iv)
    almost = {**sure, (1, 2): (-0.01, 0.2)}
    iv = _intervals([0.3, 0.25, 0.1, 0.0], almost)
    assert not answered(rule, iv)
    assert open_students(rule, iv).tolist() == [False, True, True, False]


@pytest.mark.parametrize(("delta", "expected"), [(0.0, False), (0.02, False), (0.05, True)])
def test_separated_all_takes_a_pair_shown_within_delta_as_answered(delta: float, expected: bool) -> None:
    rule = StopRule("separated", delta=delta)
    # order 0, 1, 2: the first pair separated, the second inside [-0.03, 0.04]
    iv = _intervals([0.3, 0.1, 0.09], {(0, 1): (0.1, 0.3), (1, 2): (-0.03, 0.04), (0, 2): (0.1, 0.3)})
    assert answered(rule, iv) is expected
    assert open_students(rule, iv).tolist() == ([False] * 3 if expected else [False, True, True])


def test_width_is_answered_when_every_score_interval_is_narrow_enough() -> None:
    iv = _intervals([0.1, 0.0, -0.1], {}, width=0.05)
    assert answered(StopRule("width", width=0.05), iv)
    assert not answered(StopRule("width", width=0.04), iv)
    assert open_students(StopRule("width", width=0.04), iv).tolist() == [True, True, True]


def test_a_pair_interval_is_the_paired_mean_with_its_t_interval() -> None:
    # 4 datapoints, 3 students: every student on every datapoint
    y = np.array([[0.9, 0.5, 0.1], [0.7, 0.6, 0.2], [1.0, 0.4, 0.0], [0.8, 0.5, 0.3]])
    iv = fit_intervals(AnswerScores(y), alpha=0.05)
    d = y[:, 0] - y[:, 1]
    half = student_t.ppf(0.975, 3) * d.std(ddof=1) / 2.0
    assert iv.diff_low[0, 1] == pytest.approx(d.mean() - half)
    assert iv.diff_high[0, 1] == pytest.approx(d.mean() + half)
    assert iv.score.tolist() == pytest.approx((y.mean(0) - y.mean()).tolist())


def test_a_student_let_go_is_compared_through_the_datapoints_it_shared() -> None:
    # student 2 answered the first two datapoints only: there it is 0.525 below the mean of
    # students 0 and 1; all four datapoints put student 0 0.35 above student 1 (their mean
    # paired difference), so 0.175 above that mean, and 0.70 above student 2
    y = np.array([[0.9, 0.5, 0.1], [0.7, 0.6, 0.2], [1.0, 0.4, np.nan], [0.8, 0.5, np.nan]])
    iv = fit_intervals(AnswerScores(y), alpha=0.05)
    assert iv.score[0] - iv.score[1] == pytest.approx(0.35)
    assert iv.score[0] - iv.score[2] == pytest.approx(0.70)
    assert iv.score[1] - iv.score[2] == pytest.approx(0.35)


@pytest.mark.parametrize(("raw", "message"), [
    ({"top": 0}, "stop_when.top: must be a whole number of places, 1 or more"),
    ({"top": 4}, "stop_when.top: 4 places of 4 students asks nothing"),
    ({"separated": "some"}, "stop_when.separated: the only value is 'all'"),
    ({"separated": "all", "delta": -1}, "stop_when.delta: must be a number in [0, 1)"),
    ({"width": 0}, "stop_when.width: must be a number in (0, 1]"),
    ({"tops": 1}, "stop_when: expected one of top, separated (with delta), width (got tops)"),
])  # fmt: skip
def test_a_stop_rule_that_asks_nothing_is_refused_by_name(raw: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        parse_stop_rule(raw, n_students=4)


def test_stop_rules_are_read_as_written() -> None:
    assert parse_stop_rule(None) == StopRule("top", k=1)
    assert parse_stop_rule({"top": 3}) == StopRule("top", k=3)
    assert parse_stop_rule({"separated": "all", "delta": 0.05}) == StopRule("separated", delta=0.05)
    assert parse_stop_rule({"width": 0.05}) == StopRule("width", width=0.05)


def test_alpha_is_spent_across_the_looks_and_no_more() -> None:
    fractions = np.array([0.16, 0.33, 0.5, 0.66, 0.83, 1.0])
    assert look_alphas(0.05, fractions).tolist() == pytest.approx([0.05 / 6] * 6)
    obf = look_alphas(0.05, fractions, "obrien_fleming")
    assert obf.sum() == pytest.approx(0.05)
    assert obf[0] < 1e-4 and np.all(np.diff(obf) > 0)  # almost nothing spent on the first look
    assert look_sizes(75, Design()).tolist() == [23, 33, 44, 54, 65, 75]


def _clear(n_items: int = 60) -> Scenario:
    """Five students whose answers sit at Low, between Low and Medium, Medium, between Medium
    and High, and High for four sharp judges: every pair is plain from a few datapoints."""
    return Scenario("clear", n_students=5, n_teachers=3, items_per_teacher=n_items // 3,
                    judge_noise=(0.05, 0.05, 0.05, 0.05), quality=(0.35, 0.45, 0.55, 0.65, 0.75),
                    difficulty_sd=0.03)  # fmt: skip


@pytest.mark.parametrize("seed", [0, 1, 3])
@pytest.mark.parametrize("rule", [{"top": 1}, {"top": 2}, {"separated": "all"}])
def test_a_design_whose_students_differ_clearly_stops_after_its_calibration_slice(
        rule: dict[str, object], seed: int) -> None:
    sim = simulate(_clear(), seed)
    outcome = play(sim.judgments, sim.judges, Design(stop_when=parse_stop_rule(rule)), seed)
    assert outcome.answered
    assert len(outcome.looks) == 1 and outcome.looks[0].datapoints == 18  # 30% of 60
    assert outcome.judgments == 18 * 5 * 4
    assert outcome.saved == pytest.approx(1 - 18 / 60)
    assert outcome.intervals.order().tolist() == [4, 3, 2, 1, 0]


def _tied(seed: int) -> Judgments:
    """Students 0 and 1 give the same answers (every judge scores them alike); 2 and 3 are
    plainly worse and plainly apart."""
    sim = simulate(Scenario("tied", n_students=4, items_per_teacher=20, judge_noise=(0.1, 0.1, 0.1),
                            quality=(0.65, 0.65, 0.4, 0.2)), seed)  # fmt: skip
    j = sim.judgments
    value = j.value.copy()
    for k in range(j.n_judges):
        for i in range(j.n_items):
            first = (j.judge == k) & (j.item == i) & (j.student == 0)
            second = (j.judge == k) & (j.item == i) & (j.student == 1)
            value[second] = value[first]
    return Judgments(j.item, j.student, j.judge, value, j.conflicted, j.n_items, j.n_students, j.n_judges,
                     j.item_teacher)


@pytest.mark.parametrize("seed", range(5))
def test_a_tie_is_never_called_separated(seed: int) -> None:
    j = _tied(seed)
    names = ["j0", "j1", "j2"]
    exact = play(j, names, Design(stop_when=StopRule("separated", delta=0.0)), seed)
    assert not exact.answered  # a tie cannot be separated nor shown within 0: every datapoint bought
    assert exact.looks[-1].datapoints == 60
    assert exact.intervals.diff_low[0, 1] < 0 < exact.intervals.diff_high[0, 1]
    top = play(j, names, Design(), seed)
    assert not top.answered
    assert top.looks[-1].open == (0, 1)  # the tied two are bought to the end, the rest let go
    within = play(j, names, Design(stop_when=StopRule("separated", delta=0.05)), seed)
    assert within.answered  # shown within 0.05 of each other
    assert within.judgments < within.judgments_full


def test_judges_that_carry_no_signal_never_name_a_first_place() -> None:
    for seed in range(10):
        sim = simulate(NOISE_ONLY, seed)
        assert not play(sim.judgments, sim.judges, Design(), seed).answered


def _coverage(sc: Scenario, seeds: range, design: Design) -> float:
    a, b = np.triu_indices(sc.n_students, 1)
    covered, total = 0, 0
    for seed in seeds:
        sim = simulate(sc, seed)
        outcome = play(sim.judgments, sim.judges, design, seed)
        truth = expected_differences(sc, sim.quality, outcome)
        assert truth is not None
        lo, hi = outcome.intervals.diff_low[a, b], outcome.intervals.diff_high[a, b]
        covered += int(((lo <= truth[a, b]) & (truth[a, b] <= hi)).sum())
        total += a.size
    return covered / total


@pytest.mark.parametrize("scenario", ["decent", "same_family"])
def test_pair_intervals_cover_their_value_at_the_look_where_the_design_stopped(scenario: str) -> None:
    assert _coverage(SCENARIOS[scenario], range(8), Design()) >= 0.90


def test_after_the_slice_only_open_students_and_kept_judges_are_bought() -> None:
    sim = simulate(REFERENCE_FIVE, 3)
    outcome = play(sim.judgments, sim.judges, Design(), 3)
    assert outcome.screening is not None
    assert outcome.screening.stopped == ["j2", "j3", "j4"]
    assert outcome.kept == (0, 1)
    bought = outcome.bought
    slice_items = set(np.unique(bought.item[bought.judge == 2]).tolist())
    assert len(slice_items) == outcome.looks[0].datapoints  # the stopped judges graded the slice only
    for judge in (3, 4):
        assert set(np.unique(bought.item[bought.judge == judge]).tolist()) == slice_items
    later = ~np.isin(bought.item, list(slice_items))
    assert set(np.unique(bought.student[later]).tolist()) <= set(outcome.looks[0].open)
    assert outcome.saved >= 0.5
