"""The headline recovers the truth of synthetic runs and ignores a random judge; the
diagnostic ranking's judge and datapoint weights do what they say."""

from __future__ import annotations

import numpy as np
import pytest
from coeval_analysis import analyze, load_run
from coeval_analysis.analysis import AnalysisOptions
from coeval_analysis.stats.diagnostic_ranking import judge_weights

QUALITY = {"stu-a": 0.75, "stu-b": 0.67, "stu-c": 0.59, "stu-d": 0.51, "stu-e": 0.43}
TRUE_ORDER = list(QUALITY)


def _headline_order(summary: dict) -> list[str]:
    return sorted(summary["students"], key=lambda s: summary["students"][s]["headline_rank"])


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ranked_in_true_order_and_random_judge_gets_no_weight(make_run, seed: int) -> None:
    run = make_run(
        students=QUALITY,
        judges={"judge-1": 0.08, "judge-2": 0.15, "judge-3": 0.25},
        random_judges=("judge-random",),
        datapoints_per_teacher=25,
        failure_rate=0.02,
        duplicate_rate=0.01,
        seed=seed,
    )
    s = analyze(load_run(run), AnalysisOptions(n_boot=300, seed=seed)).summary
    assert _headline_order(s) == TRUE_ORDER
    judges = s["judges"]
    assert judges["judge-random"]["weight"] < 0.05
    assert judges["judge-random"]["weight_ci"][1] < 0.05
    # less noise, more weight
    assert judges["judge-1"]["weight"] > judges["judge-2"]["weight"] > judges["judge-3"]["weight"]
    assert sum(j["weight"] for j in judges.values()) == pytest.approx(1.0)
    for name, judge in judges.items():
        low, high = judge["weight_ci"]
        assert low <= judge["weight"] <= high, name
    for name, student in s["students"].items():
        low, high = student["headline_ci"]
        assert low <= student["headline_score"] <= high, name


@pytest.mark.slow
def test_headline_survives_a_random_majority_of_weak_signal(make_run) -> None:
    """Two random judges and one weakly informative judge: equal weighting blurs the
    differences towards the middle, the weighted score keeps them."""
    run = make_run(
        students=QUALITY,
        judges={"judge-good": 0.1, "judge-ok": 0.2},
        random_judges=("rand-1", "rand-2"),
        datapoints_per_teacher=25,
        seed=7,
    )
    s = analyze(load_run(run), AnalysisOptions(n_boot=200)).summary
    assert _headline_order(s) == TRUE_ORDER
    assert s["judges"]["rand-1"]["weight"] < 0.05 and s["judges"]["rand-2"]["weight"] < 0.05
    spread_headline = s["students"]["stu-a"]["headline_score"] - s["students"]["stu-e"]["headline_score"]
    spread_plain = s["students"]["stu-a"]["score"] - s["students"]["stu-e"]["score"]
    assert spread_headline > 1.4 * spread_plain


def test_judge_weights_zero_out_a_contrarian_judge() -> None:
    rng = np.random.default_rng(0)
    truth = rng.random(500)
    noisy = [truth + rng.normal(0, sd, 500) for sd in (0.1, 0.2, 0.3)]
    x = np.stack([*noisy, 1 - truth], 1)
    w, r, _ = judge_weights(x)
    assert w[3] == 0.0 and r[3] < 0
    assert w[0] > w[1] > w[2] > 0
    assert w.sum() == pytest.approx(1.0)


def test_two_judges_that_agree_share_the_weight() -> None:
    """With two informative judges, agreement cannot tell which one is noisier."""
    rng = np.random.default_rng(0)
    truth = rng.random(500)
    x = np.stack([truth + rng.normal(0, 0.1, 500), truth + rng.normal(0, 0.2, 500)], 1)
    w, r, _ = judge_weights(x)
    assert w == pytest.approx([0.5, 0.5])
    assert r[0] == pytest.approx(r[1])


def test_a_judge_with_few_items_earns_little_weight() -> None:
    rng = np.random.default_rng(1)
    truth = rng.random(400)
    x = np.stack(
        [truth + rng.normal(0, 0.1, 400), truth + rng.normal(0, 0.1, 400), truth + rng.normal(0, 0.1, 400)], 1
    )
    x[5:, 2] = np.nan  # the third judge scored 5 items only
    w, _, n = judge_weights(x)
    assert n[2] == 5
    assert w[2] < 0.2 * w[0]


def test_item_weights_down_weight_items_that_do_not_separate_students(make_run) -> None:
    run = make_run(
        students=QUALITY,
        judges={"judge-1": 0.08, "judge-2": 0.1},
        random_judges=(),
        teachers=("sharp", "flat"),
        teacher_spread={"sharp": 1.5, "flat": 0.0},
        datapoints_per_teacher=30,
        seed=3,
    )
    a = analyze(load_run(run), AnalysisOptions(n_boot=100))
    items = a.tables["datapoints"]
    mean_weight = items.groupby("teacher")["item_weight"].mean()
    assert mean_weight["sharp"] > 1.5 * mean_weight["flat"]
    teachers = a.summary["teachers"]
    assert teachers["sharp"]["discrimination"] > 2 * teachers["flat"]["discrimination"]
    assert teachers["sharp"]["item_weight"] > 2 * teachers["flat"]["item_weight"]
    assert teachers["sharp"]["ranking_agreement"] is not None
