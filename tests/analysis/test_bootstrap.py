"""The Poisson bootstrap gives the intervals a multinomial bootstrap gives, deterministically."""

from __future__ import annotations

import numpy as np
import pytest
from coeval_analysis.stats.bootstrap import Bootstrap, percentile_interval


def _multinomial_ci(x: np.ndarray, n_boot: int, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    means = np.array([x[rng.integers(0, len(x), len(x))].mean() for _ in range(n_boot)])
    lo, hi = np.quantile(means, [0.025, 0.975])
    return float(lo), float(hi)


@pytest.mark.parametrize("n", [40, 400])
def test_interval_of_a_mean_matches_the_classic_bootstrap(n: int) -> None:
    x = np.random.default_rng(n).beta(2, 5, n)
    boot = Bootstrap(n, n_boot=4000, seed=1)
    lo, hi = boot.ratio_ci(x[:, None], np.ones((n, 1)))
    ref_lo, ref_hi = _multinomial_ci(x, 4000, 2)
    width = ref_hi - ref_lo
    assert lo[0] == pytest.approx(ref_lo, abs=0.1 * width)
    assert hi[0] == pytest.approx(ref_hi, abs=0.1 * width)
    se = x.std(ddof=1) / np.sqrt(n)
    assert (hi[0] - lo[0]) == pytest.approx(2 * 1.96 * se, rel=0.15)


def test_resamples_are_deterministic_and_shared_by_subsets() -> None:
    boot = Bootstrap(50, n_boot=20, seed=3)
    w1 = np.concatenate(list(boot.weights()))
    w2 = np.concatenate(list(Bootstrap(50, n_boot=20, seed=3).weights()))
    assert np.array_equal(w1, w2)
    x = np.arange(50, dtype=float)[:, None]
    items = np.array([3, 7, 11])
    (sub,) = boot.ratios([(items, x[items], np.ones((3, 1)))])
    expected = (w1[:, items] @ x[items]) / w1[:, items].sum(1, keepdims=True)
    assert np.allclose(sub[~np.isnan(sub[:, 0])], expected[~np.isnan(sub[:, 0])])


def test_multiplicities_are_poisson_one() -> None:
    w = np.concatenate(list(Bootstrap(20000, n_boot=10, seed=0).weights()))
    assert w.mean() == pytest.approx(1.0, abs=0.01)
    assert w.var() == pytest.approx(1.0, abs=0.02)
    assert (w == 0).mean() == pytest.approx(np.exp(-1), abs=0.01)


def test_percentile_interval_ignores_empty_resamples() -> None:
    reps = np.array([[np.nan, 1.0], [0.2, 2.0], [0.4, 3.0], [0.6, np.nan]])
    lo, hi = percentile_interval(reps, 0.5)
    assert lo[0] == pytest.approx(0.3) and hi[0] == pytest.approx(0.5)
    assert lo[1] == pytest.approx(1.5) and hi[1] == pytest.approx(2.5)
