"""Judge agreement: percent agreement, Cohen's kappa, Krippendorff's alpha and ICC.

All functions take plain numpy matrices so they can be checked against independent
implementations (sklearn, krippendorff, pingouin) on the same data. Scores are ordinal
levels 0..C-1 (Low, Medium, High = 0, 1, 2); -1 means "not scored".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

__all__ = [
    "cohen_kappa",
    "confusion",
    "icc",
    "krippendorff_alpha",
    "landis_koch",
    "pairwise_agreement",
]


def confusion(a: np.ndarray, b: np.ndarray, n_levels: int) -> np.ndarray:
    """n_levels x n_levels counts of (a, b) level pairs where both are scored."""
    both = (a >= 0) & (b >= 0)
    idx = a[both].astype(np.int64) * n_levels + b[both].astype(np.int64)
    return np.bincount(idx, minlength=n_levels * n_levels).reshape(n_levels, n_levels).astype(float)


def cohen_kappa(table: np.ndarray, weights: Literal["linear", "quadratic"] | None = None) -> float:
    """Cohen's kappa of a confusion table (rows: rater a, columns: rater b).

    ``weights=None`` is the unweighted kappa; "linear" weighs a disagreement by its
    distance |i - j| / (C - 1). NaN when chance agreement is perfect (both raters used one
    and the same level everywhere), where kappa is undefined.
    """
    n = table.sum()
    c = table.shape[0]
    if n == 0:
        return float("nan")
    i, j = np.indices((c, c))
    if weights is None:
        w = (i != j).astype(float)
    elif weights == "linear":
        w = np.abs(i - j) / max(c - 1, 1)
    elif weights == "quadratic":
        w = ((i - j) / max(c - 1, 1)) ** 2
    else:  # pragma: no cover - guarded by the type
        raise ValueError(weights)
    observed = table / n
    expected = np.outer(table.sum(1), table.sum(0)) / n**2
    d_e = float((w * expected).sum())
    if d_e <= 1e-12:
        return float("nan")
    return 1.0 - float((w * observed).sum()) / d_e


def pairwise_agreement(levels: np.ndarray, judges: Sequence[str], n_levels: int = 3) -> list[dict[str, Any]]:
    """For each pair of judges, on the units both scored: ``n``, simple percent agreement
    ``spa``, weighted agreement ``wpa`` (1 - |a - b| / (C - 1)), Cohen's ``kappa`` and
    linear-weighted ``kappa_linear``.

    ``levels``: units x judges, int levels with -1 for "not scored".
    """
    out = []
    k = levels.shape[1]
    for x in range(k):
        for y in range(x + 1, k):
            table = confusion(levels[:, x], levels[:, y], n_levels)
            n = int(table.sum())
            if n == 0:
                out.append(
                    {
                        "a": judges[x],
                        "b": judges[y],
                        "n": 0,
                        "spa": None,
                        "wpa": None,
                        "kappa": None,
                        "kappa_linear": None,
                    }
                )
                continue
            i, j = np.indices(table.shape)
            spa = float(np.trace(table)) / n
            wpa = float(((1.0 - np.abs(i - j) / max(n_levels - 1, 1)) * table).sum()) / n
            out.append(
                {
                    "a": judges[x],
                    "b": judges[y],
                    "n": n,
                    "spa": spa,
                    "wpa": wpa,
                    "kappa": _none_if_nan(cohen_kappa(table)),
                    "kappa_linear": _none_if_nan(cohen_kappa(table, "linear")),
                }
            )
    return out


def _none_if_nan(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


def krippendorff_alpha(
    values: np.ndarray, level: Literal["nominal", "ordinal", "interval"] = "ordinal"
) -> float:
    """Krippendorff's alpha of a units x coders matrix (NaN = missing), over the units that
    at least two coders scored. Ordinal distances use the coincidence marginals
    (Krippendorff 2011), so the result equals the reference implementations'.
    """
    x = np.asarray(values, dtype=float)
    present = ~np.isnan(x)
    cats = np.unique(x[present])
    if len(cats) < 2:
        return float("nan")
    codes = np.searchsorted(cats, np.where(present, x, cats[0]))
    n_c = len(cats)
    counts = np.zeros((x.shape[0], n_c))
    for c in range(n_c):
        counts[:, c] = ((codes == c) & present).sum(1)
    m = counts.sum(1)
    pairable = m >= 2
    counts, m = counts[pairable], m[pairable]
    if len(m) == 0:
        return float("nan")
    scaled = counts / (m - 1)[:, None]
    coincidence = scaled.T @ counts - np.diag(scaled.sum(0))
    marg = coincidence.sum(1)
    n = marg.sum()
    delta = _distance(level, cats, marg)
    d_o = float((coincidence * delta).sum())
    d_e = float((np.outer(marg, marg) * delta).sum())
    if d_e == 0:
        return float("nan")
    return float(1.0 - (n - 1) * d_o / d_e)


def _distance(level: str, cats: np.ndarray, marg: np.ndarray) -> np.ndarray:
    i, j = np.indices((len(cats), len(cats)))
    if level == "nominal":
        return np.asarray((i != j).astype(float))
    if level == "interval":
        return np.asarray((cats[:, None] - cats[None, :]) ** 2)
    if level == "ordinal":
        cum = np.concatenate([[0.0], np.cumsum(marg)])
        lo, hi = np.minimum(i, j), np.maximum(i, j)
        between = cum[hi + 1] - cum[lo]
        return np.asarray((between - (marg[i] + marg[j]) / 2.0) ** 2)
    raise ValueError(f"unknown level of measurement {level!r}")


def icc(matrix: np.ndarray, confidence: float = 0.95) -> dict[str, Any]:
    """Intraclass correlations of an items x raters matrix without gaps (Shrout & Fleiss 1979;
    McGraw & Wong 1996), from two-way ANOVA mean squares.

    ``icc3_1``: consistency of one rater (two-way mixed), ``icc3_k``: consistency of the mean
    of the k raters, ``icc2_1``: absolute agreement of one rater (two-way random), each with
    an F-based confidence interval (``*_ci``).
    """
    from scipy.special import fdtri  # F quantiles; scipy.stats would add half a second of import

    x = np.asarray(matrix, dtype=float)
    n, k = x.shape
    nan = float("nan")
    if n < 2 or k < 2:
        return {
            "icc3_1": nan,
            "icc3_k": nan,
            "icc2_1": nan,
            "n_items": n,
            "n_raters": k,
            "icc3_1_ci": [nan, nan],
            "icc3_k_ci": [nan, nan],
            "icc2_1_ci": [nan, nan],
        }
    grand = x.mean()
    ss_rows = k * ((x.mean(1) - grand) ** 2).sum()
    ss_cols = n * ((x.mean(0) - grand) ** 2).sum()
    ss_total = ((x - grand) ** 2).sum()
    ss_err = ss_total - ss_rows - ss_cols
    df_r, df_c, df_e = n - 1, k - 1, (n - 1) * (k - 1)
    msr, msc, mse = ss_rows / df_r, ss_cols / df_c, ss_err / df_e
    with np.errstate(divide="ignore", invalid="ignore"):
        icc3_1 = (msr - mse) / (msr + (k - 1) * mse)
        icc3_k = (msr - mse) / msr
        icc2_1 = (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n)
    alpha = 1.0 - confidence
    out: dict[str, Any] = {
        "icc3_1": float(icc3_1),
        "icc3_k": float(icc3_k),
        "icc2_1": float(icc2_1),
        "n_items": n,
        "n_raters": k,
        "ms_rows": float(msr),
        "ms_cols": float(msc),
        "ms_error": float(mse),
    }
    with np.errstate(divide="ignore", invalid="ignore"):
        f0 = msr / mse
        f_l = f0 / fdtri(df_r, df_e, 1 - alpha / 2)
        f_u = f0 * fdtri(df_e, df_r, 1 - alpha / 2)
        out["icc3_1_ci"] = [float((f_l - 1) / (f_l + k - 1)), float((f_u - 1) / (f_u + k - 1))]
        out["icc3_k_ci"] = [float(1 - 1 / f_l), float(1 - 1 / f_u)]
        # ICC(2,1): Satterthwaite degrees of freedom (Shrout & Fleiss 1979, eq. for case 2)
        fj = msc / mse
        vn = df_e * (k * icc2_1 * fj + n * (1 + (k - 1) * icc2_1) - k * icc2_1) ** 2
        vd = df_r * k**2 * icc2_1**2 * fj**2 + (n * (1 + (k - 1) * icc2_1) - k * icc2_1) ** 2
        v = vn / vd
        f_up = fdtri(df_r, v, 1 - alpha / 2)
        f_lo = fdtri(v, df_r, 1 - alpha / 2)
        lo = n * (msr - f_up * mse) / (f_up * (k * msc + (k * n - k - n) * mse) + n * msr)
        hi = n * (f_lo * msr - mse) / (k * msc + (k * n - k - n) * mse + n * f_lo * msr)
        out["icc2_1_ci"] = [float(lo), float(hi)]
    return out


def landis_koch(kappa: float | None) -> str:
    """Landis & Koch's words for a kappa value."""
    if kappa is None or np.isnan(kappa):
        return "undefined"
    if kappa < 0:
        return "poor"
    for bound, word in ((0.2, "slight"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial")):
        if kappa <= bound:
            return word
    return "almost perfect"
