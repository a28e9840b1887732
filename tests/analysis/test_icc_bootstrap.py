"""ICC intervals clustered by datapoint."""

from __future__ import annotations

import numpy as np
import pytest
from coeval_analysis.stats.agreement import icc
from coeval_analysis.stats.bootstrap import Bootstrap
from coeval_analysis.stats.icc_bootstrap import _item_sums, icc_from_sums, icc_intervals


def _clustered(seed: int, n_items: int = 60, per_item: int = 10, k: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Units nested in datapoints: a datapoint effect shared by its units and its judges'
    datapoint-level disagreement, so units of one datapoint are not independent."""
    rng = np.random.default_rng(seed)
    item = np.repeat(np.arange(n_items), per_item)
    truth = rng.normal(0, 1, n_items)[item] + rng.normal(0, 0.5, len(item))
    judge_item = rng.normal(0, 0.6, (n_items, k))[item]
    return truth[:, None] + judge_item + rng.normal(0, 0.5, (len(item), k)), item


def test_sums_with_unit_weights_give_the_anova_iccs() -> None:
    mat, item = _clustered(0)
    got = icc_from_sums(_item_sums(mat, item, 60).sum(0), 3)
    want = icc(mat)
    for key in ("icc3_1", "icc3_k", "icc2_1"):
        assert float(got[key]) == pytest.approx(want[key], rel=1e-10)


def test_clustered_intervals_are_wider_than_the_f_intervals_and_cover() -> None:
    widths, hits = [], []
    truth = icc(_clustered(999, n_items=20_000, per_item=2)[0])["icc3_1"]
    for seed in range(20):
        mat, item = _clustered(seed)
        f_lo, f_hi = icc(mat)["icc3_1_ci"]
        lo, hi = icc_intervals(mat, item, Bootstrap(60, 400, seed), 0.95)["icc3_1_ci"]
        widths.append((hi - lo) / (f_hi - f_lo))
        hits.append(lo <= truth <= hi)
    assert np.mean(widths) > 1.5
    assert np.mean(hits) >= 0.85
