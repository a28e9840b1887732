"""Percentile bootstrap over items (datapoints), vectorised as matrix products.

Every statistic the analysis bootstraps is a ratio of sums over items,
``sum_i num[i, k] / sum_i den[i, k]`` (a mean of response scores, a weighted mean, a
correlation's moments). A resample is a vector of item multiplicities ``w``, so a batch of
resamples is one float32 BLAS product ``W @ num``.

Multiplicities are Poisson(1) (the *Poisson bootstrap*, Hanley & MacGibbon 2006): each
datapoint is drawn independently a Poisson(1) number of times, which approximates the
multinomial resample and has one property this module relies on: the columns of ``W`` for
any subset of datapoints are themselves a Poisson resample of that subset. So a statistic
over the datapoints of one task, teacher or attribute value multiplies only those columns
(cheaper) and still shares the resamples of every other statistic (same seed, same
draws). Ratios make the random total weight cancel out.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

__all__ = ["Bootstrap", "percentile_interval"]


def _poisson_table(bits: int = 16) -> np.ndarray:
    """Poisson(1) quantiles of the 2**bits equally likely uniform draws (inverse CDF):
    indexing it with random integers draws Poisson(1) values 20x faster than
    ``Generator.poisson``; the CDF is exact to 1 / 2**bits (values above 8 never occur,
    probability 1e-6)."""
    pmf = np.exp(-1.0) / np.cumprod([1.0, *range(1, 20)])  # P(k) = e^-1 / k!
    cdf = np.cumsum(pmf)
    u = (np.arange(1 << bits) + 0.5) / (1 << bits)
    return np.searchsorted(cdf, u).astype(np.float32)


_POISSON_1 = _poisson_table()


class Bootstrap:
    """``n_boot`` Poisson resamples of ``n_items`` items, in chunks of resamples."""

    #: resamples are kept in memory (not regenerated per statistic) up to this many weights
    CACHE_LIMIT = 64_000_000

    def __init__(self, n_items: int, n_boot: int = 1000, seed: int = 0, chunk: int = 250) -> None:
        self.n_items = n_items
        self.n_boot = n_boot
        self.seed = seed
        self.chunk = max(1, chunk)
        self._cache: list[np.ndarray] | None = None

    def weights(self) -> Iterator[np.ndarray]:
        """(chunk, n_items) float32 multiplicities; the same sequence on every call."""
        if self._cache is not None:
            yield from self._cache
            return
        keep = self.n_boot * self.n_items <= self.CACHE_LIMIT
        cache: list[np.ndarray] = []
        for start in range(0, self.n_boot, self.chunk):
            size = min(self.chunk, self.n_boot - start)
            rng = np.random.default_rng([self.seed, start])
            u = rng.integers(0, 1 << 16, size=(size, self.n_items), dtype=np.uint16)
            w = _POISSON_1[u]
            if keep:
                cache.append(w)
            yield w
        if keep:
            self._cache = cache

    def ratios(self, blocks: list[tuple[np.ndarray | None, np.ndarray, np.ndarray]]) -> list[np.ndarray]:
        """Bootstrap replicates of ratio statistics, several blocks in one pass over the
        resamples. A block is ``(items, num, den)``: ``items`` the item indices its rows
        belong to (None = all items in order), ``num`` (rows x K), ``den`` (rows x K or
        rows x 1 when every column shares it). Returns (n_boot, K) per block; NaN where a
        resample leaves a column without weight."""
        # Blocks over all items are stacked into one wide product: each chunk of W is then
        # read once for all of them (narrow products are bound by reading W, not by FLOPs).
        Span = tuple[int, int, int, int]  # block, first num column, first den column, den width
        prepared: list[tuple[np.ndarray | None, np.ndarray, np.ndarray, list[Span]]] = []
        whole = [i for i, (items, _, _) in enumerate(blocks) if items is None]
        if whole:
            spans: list[Span] = []
            n0 = d0 = 0
            for i in whole:
                spans.append((i, n0, d0, blocks[i][2].shape[1]))
                n0 += blocks[i][1].shape[1]
                d0 += blocks[i][2].shape[1]
            num_all = _f32(np.hstack([blocks[i][1] for i in whole]))
            den_all = _f32(np.hstack([blocks[i][2] for i in whole]))
            prepared.append((None, num_all, den_all, spans))
        for i, (items, num, den) in enumerate(blocks):
            if items is not None:
                prepared.append((items, _f32(num), _f32(den), [(i, 0, 0, den.shape[1])]))
        outs = [np.empty((self.n_boot, num.shape[1])) for _, num, _ in blocks]
        row = 0
        for w in self.weights():
            for items, num, den, block_spans in prepared:
                ws = w if items is None else w[:, items]
                top = ws @ num
                bottom = ws @ den
                for i, n0, d0, dk in block_spans:
                    k = blocks[i][1].shape[1]
                    t, b = top[:, n0 : n0 + k], bottom[:, d0 : d0 + dk]
                    with np.errstate(invalid="ignore", divide="ignore"):
                        outs[i][row : row + len(w)] = np.where(b > 0, t / np.where(b > 0, b, 1), np.nan)
            row += len(w)
        return outs

    def replicates(self, num: np.ndarray, den: np.ndarray) -> np.ndarray:
        """(n_boot, K) values of ``sum num / sum den`` per column over resamples."""
        return self.ratios([(None, num, den)])[0]

    def sums(self, values: np.ndarray) -> np.ndarray:
        """(n_boot, K) column sums of ``values`` (n_items x K) over resamples."""
        values = np.ascontiguousarray(values, dtype=np.float32)
        parts = [(w @ values).astype(np.float64) for w in self.weights()]
        return np.concatenate(parts, axis=0) if parts else np.zeros((0, values.shape[1]))

    def ratio_ci(
        self, num: np.ndarray, den: np.ndarray, level: float = 0.95
    ) -> tuple[np.ndarray, np.ndarray]:
        """Percentile interval of each column's ratio of sums."""
        if num.shape[1] == 0:
            return np.zeros(0), np.zeros(0)
        return percentile_interval(self.replicates(num, den), level)


def percentile_interval(reps: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Columnwise percentile interval of bootstrap replicates, ignoring NaN replicates."""
    tail = (1.0 - level) / 2.0
    lo = np.full(reps.shape[1], np.nan)
    hi = np.full(reps.shape[1], np.nan)
    if reps.shape[0] == 0:
        return lo, hi
    ok = ~np.isnan(reps)
    has = ok.any(0)
    if has.any():
        sub = reps[:, has]
        if ok[:, has].all():
            q = np.quantile(sub, [tail, 1.0 - tail], axis=0)
        else:
            q = np.nanquantile(sub, [tail, 1.0 - tail], axis=0)
        lo[has], hi[has] = q[0], q[1]
    return lo, hi


def _f32(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32)
