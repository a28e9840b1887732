"""Pairwise comparisons, rank intervals and tie-aware rank ranges from shared resamples.

Every student's score is recomputed on the same datapoint resamples, so the difference
of two students is bootstrapped *paired*: the items both answered move together, and the
interval is much narrower than two separate intervals suggest. Two students whose
difference interval contains 0 are not told apart: their rank ranges overlap ("4-5").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from coeval_analysis.stats.bootstrap import percentile_interval

__all__ = ["Comparisons", "compare_students", "rank_label"]


@dataclass
class Comparisons:
    pairs: list[dict[str, Any]]  #: {a, b, diff, ci: [lo, hi], p}, a listed before b
    rank_ci: list[tuple[int, int] | None]  #: bootstrap percentile interval of each rank
    rank_range: list[tuple[int, int] | None]  #: ranks consistent with the significant pairs


def _ranks_per_row(reps: np.ndarray) -> np.ndarray:
    """Competition ranks per resample row (1 = best; NaN ranks last)."""
    v = np.where(np.isnan(reps), -np.inf, reps)
    ranks: np.ndarray = 1 + (v[:, None, :] > v[:, :, None]).sum(2)
    return ranks


def compare_students(
    names: list[str], score: np.ndarray, reps: np.ndarray, level: float = 0.95
) -> Comparisons:
    """Comparisons of every pair of scored students, from (n_boot, students) replicates."""
    S = len(names)
    scored = ~np.isnan(score)
    pairs: list[dict[str, Any]] = []
    better = np.zeros(S, np.int64)  # how many students are significantly above each
    worse = np.zeros(S, np.int64)
    have_reps = reps.shape[0] > 0
    order = [i for i in np.argsort(-np.where(scored, score, -np.inf), kind="stable") if scored[i]]
    for x, a in enumerate(order):
        for b in order[x + 1 :]:
            diff = float(score[a] - score[b])
            entry: dict[str, Any] = {"a": names[a], "b": names[b], "diff": diff, "ci": [None, None], "p": None}
            if have_reps:
                d = reps[:, a] - reps[:, b]
                d = d[~np.isnan(d)]
                if len(d):
                    lo, hi = percentile_interval(d[:, None], level)
                    entry["ci"] = [float(lo[0]), float(hi[0])]
                    tail = min(int((d <= 0).sum()), int((d >= 0).sum()))
                    entry["p"] = min(1.0, 2.0 * (tail + 1) / (len(d) + 1))
                    if lo[0] > 0:
                        better[b] += 1
                        worse[a] += 1
                    elif hi[0] < 0:
                        better[a] += 1
                        worse[b] += 1
            pairs.append(entry)
    n_scored = int(scored.sum())
    rank_range: list[tuple[int, int] | None] = [  # None without resamples: nothing to test
        (1 + int(better[i]), n_scored - int(worse[i])) if scored[i] and have_reps else None
        for i in range(S)
    ]
    rank_ci: list[tuple[int, int] | None] = [None] * S
    if have_reps and n_scored:
        ranks = _ranks_per_row(reps).astype(np.float64)
        lo, hi = percentile_interval(ranks, level)
        rank_ci = [(int(np.floor(lo[i])), int(np.ceil(hi[i]))) if scored[i] else None for i in range(S)]
    return Comparisons(pairs, rank_ci, rank_range)


def rank_label(rank_range: tuple[int, int] | list[int] | None) -> str:
    """"3" for a rank known exactly, "4-5" for a range, "—" for an unscored student."""
    if not rank_range:
        return "—"
    lo, hi = rank_range
    return str(lo) if lo == hi else f"{lo}-{hi}"
