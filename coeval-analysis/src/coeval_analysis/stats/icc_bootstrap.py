"""ICC intervals clustered by datapoint.

The units of ICC are (response, rubric factor) pairs, and the many units of one datapoint
(every student's answer, every factor) are not independent: an easy prompt lifts them all.
The F-based intervals of :func:`coeval_analysis.stats.agreement.icc` treat units as
independent and come out too narrow; here the two-way ANOVA is recomputed on the shared
datapoint resamples (units weighted by their datapoint's multiplicity), from per-datapoint
sums, so a resample costs one matrix product whatever the number of units.
"""

from __future__ import annotations

import numpy as np

from coeval_analysis.stats.bootstrap import Bootstrap, percentile_interval

__all__ = ["icc_from_sums", "icc_intervals"]


def _item_sums(mat: np.ndarray, item: np.ndarray, n_items: int) -> np.ndarray:
    """Per datapoint: [units, sum of row means, sum of squared row means, sum of squares,
    then the sum of each rater's scores]."""
    row_mean = mat.mean(1)
    cols = [
        np.bincount(item, minlength=n_items).astype(np.float64),
        np.bincount(item, row_mean, n_items),
        np.bincount(item, row_mean**2, n_items),
        np.bincount(item, (mat**2).sum(1), n_items),
    ]
    cols += [np.bincount(item, mat[:, j], n_items) for j in range(mat.shape[1])]
    return np.stack(cols, 1)


def icc_from_sums(sums: np.ndarray, k: int) -> dict[str, np.ndarray]:
    """ICC(3,1), ICC(3,k), ICC(2,1) from (..., 4 + k) weighted sums (weights = multiplicities)."""
    w, _sm, sm2, sy2 = sums[..., 0], sums[..., 1], sums[..., 2], sums[..., 3]
    col = sums[..., 4:]
    with np.errstate(divide="ignore", invalid="ignore"):
        grand = col.sum(-1) / (k * w)
        ss_rows = k * (sm2 - w * grand**2)
        ss_cols = w * ((col / w[..., None] - grand[..., None]) ** 2).sum(-1)
        ss_err = sy2 - k * w * grand**2 - ss_rows - ss_cols
        msr = ss_rows / (w - 1)
        msc = ss_cols / (k - 1)
        mse = ss_err / ((w - 1) * (k - 1))
        return {
            "icc3_1": (msr - mse) / (msr + (k - 1) * mse),
            "icc3_k": (msr - mse) / msr,
            "icc2_1": (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / w),
        }


def icc_intervals(
    mat: np.ndarray, item: np.ndarray, boot: Bootstrap, level: float
) -> dict[str, list[float]]:
    """Percentile intervals of the three ICCs over datapoint resamples; ``item`` is the
    datapoint (index into the bootstrap's items) of each row of the units x raters ``mat``."""
    k = mat.shape[1]
    reps = icc_from_sums(boot.sums(_item_sums(mat, item, boot.n_items)), k)
    out = {}
    for key, values in reps.items():
        lo, hi = percentile_interval(np.where(np.isfinite(values), values, np.nan)[:, None], level)
        out[f"{key}_ci"] = [float(lo[0]), float(hi[0])]
    return out
