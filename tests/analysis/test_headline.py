"""The headline (conflict-aware) ranking against the truth of synthetic scenarios.

Each scenario class of the design brief is drawn over 24 seeds (10 students, 3 teachers x
25 items); the headline ranking must track the true student quality at least as well as
the plain mean, and clearly better where two related judges favour their family.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from coeval_analysis.scenarios import SCENARIOS, Scenario, plain_scores, simulate
from coeval_analysis.stats.headline import fit_headline
from scipy.stats import spearmanr

SEEDS = range(24)


def _measure(sc: Scenario) -> dict[str, float]:
    rho_plain, rho_head, top_plain, top_head = [], [], [], []
    for seed in SEEDS:
        sim = simulate(sc, seed)
        plain = plain_scores(sim.judgments)
        head = fit_headline(sim.judgments).score
        best = int(np.argmax(sim.quality))
        rho_plain.append(spearmanr(plain, sim.quality)[0])
        rho_head.append(spearmanr(head, sim.quality)[0])
        top_plain.append(int(np.nanargmax(plain)) == best)
        top_head.append(int(np.nanargmax(head)) == best)
    return {
        "plain": float(np.mean(rho_plain)),
        "head": float(np.mean(rho_head)),
        "top_plain": float(np.mean(top_plain)),
        "top_head": float(np.mean(top_head)),
    }


@pytest.mark.parametrize(
    "name", ["random_judge", "self_preferring", "same_family", "idiosyncratic", "hardest_fail", "bad_teacher"]
)
def test_headline_tracks_truth_at_least_as_well_as_the_plain_mean(name: str) -> None:
    m = _measure(SCENARIOS[name])
    assert m["head"] >= m["plain"], m


def test_same_family_judges_no_longer_pick_the_winner() -> None:
    m = _measure(SCENARIOS["same_family"])
    assert m["head"] >= m["plain"] + 0.05, m
    assert m["top_head"] >= m["top_plain"], m


def test_random_judge_gets_almost_no_weight() -> None:
    for seed in SEEDS:
        h = fit_headline(simulate(SCENARIOS["random_judge"], seed).judgments)
        assert h.judge_weight[-1] < 0.05
        assert h.converged


def test_uninformative_teacher_weighs_less_than_good_ones() -> None:
    sim = simulate(SCENARIOS["bad_teacher"], 3)
    h = fit_headline(sim.judgments)
    teacher = sim.judgments.item_teacher
    per_teacher = [h.item_weight[teacher == t].mean() for t in range(3)]
    assert per_teacher[2] < 0.5 * min(per_teacher[0], per_teacher[1]), per_teacher


@pytest.mark.parametrize("seed", range(5))
def test_one_good_two_random_judges_converge_without_a_sole_winner(seed: int) -> None:
    # no judge agrees with another beyond chance: nothing tells the good one apart, so
    # the weights must settle (not flip between judges) and stay equal
    sc = Scenario("one_good", judge_noise=(0.1,), random_judges=2)
    first = fit_headline(simulate(sc, seed).judgments)
    again = fit_headline(simulate(sc, seed).judgments)
    assert first.converged and first.iterations < 500
    np.testing.assert_array_equal(first.judge_weight, again.judge_weight)
    np.testing.assert_allclose(first.judge_weight, [1 / 3] * 3, atol=0.02)


def test_few_judgments_keep_weights_near_equal() -> None:
    sc = Scenario(
        "tiny", n_students=3, n_teachers=1, items_per_teacher=2, judge_noise=(0.05,), random_judges=1
    )
    h = fit_headline(simulate(sc, 1).judgments)
    assert h.judge_weight.max() < 0.8, h.judge_weight


def test_conflicted_judgments_are_left_out() -> None:
    sim = simulate(SCENARIOS["same_family"], 0)
    h = fit_headline(sim.judgments)
    n_items = sim.judgments.n_items
    assert h.n_conflicted.tolist() == [2 * n_items, 2 * n_items, 0, 0, 0]
    # a student graded by fewer judges is not advantaged: raising the favoured students'
    # conflicted scores changes nothing
    j = sim.judgments
    lifted = replace(j, value=np.where(j.conflicted, 1.0, j.value))
    np.testing.assert_allclose(fit_headline(lifted).score, h.score)


def test_student_with_every_answer_failed_has_no_score() -> None:
    sc = replace(SCENARIOS["decent"], all_failed=2)
    h = fit_headline(simulate(sc, 0).judgments)
    assert np.isnan(h.score[2])
    assert np.isfinite(np.delete(h.score, 2)).all()
