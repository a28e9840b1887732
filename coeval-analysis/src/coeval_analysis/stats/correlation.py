"""Rank correlations without importing scipy.stats (half a second of start-up).

Spearman's rho is Pearson's r of average ranks (pandas ranks ties as scipy does); Kendall's
tau-b is computed over all pairs, which is fine for the dozens of students it is used on.
Both are tested against scipy.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["correlation_from_moments", "kendall_tau_b", "pearson", "spearman"]


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    if len(x) < 2:
        return float("nan")
    dx, dy = x - x.mean(), y - y.mean()
    denom = np.sqrt((dx * dx).sum() * (dy * dy).sum())
    return float((dx * dy).sum() / denom) if denom > 0 else float("nan")


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    rx = pd.Series(np.asarray(x, float)).rank(method="average").to_numpy()
    ry = pd.Series(np.asarray(y, float)).rank(method="average").to_numpy()
    return pearson(rx, ry)


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    i, j = np.triu_indices(len(x), 1)
    sx = np.sign(x[i] - x[j])
    sy = np.sign(y[i] - y[j])
    n_x = (sx != 0).sum()
    n_y = (sy != 0).sum()
    if n_x == 0 or n_y == 0:
        return float("nan")
    return float((sx * sy).sum() / np.sqrt(n_x * n_y))


def correlation_from_moments(sums: np.ndarray, var_floor: float = 0.0) -> np.ndarray:
    """Pearson's r from moment sums stacked on the last axis as (n, sx, sc, sxx, scc, sxc).

    Lets a bootstrap resample the sums of every replicate at once instead of the pairs; an
    undefined r (no variance above ``var_floor``) is 0.
    """
    n, sx, sc, sxx, scc, sxc = (sums[..., i] for i in range(6))
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = sxc / n - (sx / n) * (sc / n)
        vx = sxx / n - (sx / n) ** 2
        vc = scc / n - (sc / n) ** 2
        r = np.where((vx > var_floor) & (vc > var_floor), cov / np.sqrt(vx * vc), 0.0)
    return np.nan_to_num(r)
