"""Agreement statistics against independent implementations and textbook values."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pingouin
import pytest
from coeval_analysis.stats.agreement import (
    cohen_kappa,
    confusion,
    icc,
    krippendorff_alpha,
    pairwise_agreement,
)
from sklearn import metrics as sk_metrics


def _ratings(
    seed: int, n: int = 300, noise: tuple[float, ...] = (0.2, 0.4, 0.6), missing: float = 0.1
) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, n)
    cols = []
    for p in noise:
        jitter = rng.integers(-1, 2, n) * (rng.random(n) < p)
        cols.append(np.clip(truth + jitter, 0, 2))
    levels = np.stack(cols, 1)
    levels[rng.random(levels.shape) < missing] = -1
    return levels


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("weights", [None, "linear"])
def test_cohen_kappa_matches_sklearn(seed: int, weights: str | None) -> None:
    levels = _ratings(seed)
    a, b = levels[:, 0], levels[:, 2]
    both = (a >= 0) & (b >= 0)
    expected = sk_metrics.cohen_kappa_score(a[both], b[both], weights=weights, labels=[0, 1, 2])
    assert cohen_kappa(confusion(a, b, 3), weights) == pytest.approx(expected, abs=1e-12)


def test_cohen_kappa_textbook_example() -> None:
    # Cohen (1960)-style 2x2 example used in many textbooks: 50 items, p_o = 0.7, p_e = 0.5
    table = np.array([[20.0, 5.0], [10.0, 15.0]])
    assert cohen_kappa(table) == pytest.approx(0.4)


def test_kappa_is_undefined_when_both_raters_use_one_level() -> None:
    a = np.array([2, 2, 2, 2])
    assert np.isnan(cohen_kappa(confusion(a, a, 3)))


def test_pairwise_agreement_counts_only_items_both_judged() -> None:
    levels = np.array([[2, 2], [1, 0], [0, -1], [-1, 1], [2, 1]])
    (pair,) = pairwise_agreement(levels, ["a", "b"])
    assert pair["n"] == 3
    assert pair["spa"] == pytest.approx(1 / 3)
    assert pair["wpa"] == pytest.approx((1 + 0.5 + 0.5) / 3)
    both = (levels >= 0).all(1)
    assert pair["kappa"] == pytest.approx(sk_metrics.cohen_kappa_score(levels[both, 0], levels[both, 1]))


@pytest.mark.parametrize("level", ["ordinal", "nominal", "interval"])
@pytest.mark.parametrize("seed", [0, 3])
def test_krippendorff_alpha_matches_reference_package(level: str, seed: int) -> None:
    values = _ratings(seed, n=250, noise=(0.1, 0.3, 0.5, 0.7), missing=0.25).astype(float)
    values[values < 0] = np.nan
    expected = krippendorff.alpha(reliability_data=values.T, level_of_measurement=level)
    assert krippendorff_alpha(values, level) == pytest.approx(expected, abs=1e-10)


def test_krippendorff_alpha_textbook_example() -> None:
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", 4 coders x 12 units
    data = np.array(
        [
            [1, 2, 3, 3, 2, 1, 4, 1, 2, np.nan, np.nan, np.nan],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, np.nan, 3],
            [np.nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, np.nan],
            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, np.nan],
        ]
    ).T
    assert krippendorff_alpha(data, "nominal") == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(data, "interval") == pytest.approx(0.849, abs=5e-4)
    assert krippendorff_alpha(data, "ordinal") == pytest.approx(0.815, abs=5e-4)


def _long(matrix: np.ndarray) -> pd.DataFrame:
    n, k = matrix.shape
    return pd.DataFrame(
        {"item": np.repeat(np.arange(n), k), "rater": np.tile(np.arange(k), n), "score": matrix.ravel()}
    )


def test_icc_textbook_example_shrout_fleiss() -> None:
    # Shrout & Fleiss (1979), table 2: 6 targets rated by 4 judges
    data = np.array(
        [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]], float
    )
    r = icc(data)
    assert r["icc2_1"] == pytest.approx(0.29, abs=0.005)
    assert r["icc3_1"] == pytest.approx(0.71, abs=0.005)
    assert r["icc3_k"] == pytest.approx(0.91, abs=0.005)


@pytest.mark.parametrize("seed", [0, 5])
def test_icc_matches_pingouin(seed: int) -> None:
    levels = _ratings(seed, n=150, noise=(0.2, 0.5, 0.3, 0.6), missing=0.0).astype(float)
    r = icc(levels)
    ref = pingouin.intraclass_corr(_long(levels), targets="item", raters="rater", ratings="score").set_index(
        "Type"
    )
    # pingouin >= 0.7 labels: ICC(C,1) = ICC(3,1), ICC(C,k) = ICC(3,k), ICC(A,1) = ICC(2,1)
    for ours, theirs in (("icc3_1", "ICC(C,1)"), ("icc3_k", "ICC(C,k)"), ("icc2_1", "ICC(A,1)")):
        assert r[ours] == pytest.approx(ref.loc[theirs, "ICC"], abs=1e-9)
        lo, hi = ref.loc[theirs, "CI95"]
        assert r[f"{ours}_ci"][0] == pytest.approx(lo, abs=0.006)  # pingouin rounds to 2 decimals
        assert r[f"{ours}_ci"][1] == pytest.approx(hi, abs=0.006)


@pytest.mark.parametrize("seed", [0, 1])
def test_rank_correlations_match_scipy(seed: int) -> None:
    from coeval_analysis.stats.correlation import kendall_tau_b, spearman
    from scipy import stats

    rng = np.random.default_rng(seed)
    x = rng.integers(0, 6, 40).astype(float)  # ties on purpose
    y = x + rng.integers(-2, 3, 40)
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
    assert kendall_tau_b(x, y) == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)
