"""Median latency by level of load, for servers whose latency is spread too wide for its
fastest answer to stand for its speed (see :class:`coeval.scheduler.latency.LatencyGradient`).

A provider behind a local gateway (LiteLLM, a corporate relay) answers with latency that
has a heavy tail: lognormal with sigma 1, its fastest answers are 20 times faster than its
mean, whatever the load. Compared with the smoothed latency, that fastest answer reads as a
queue of nearly every call in flight. Medians at different loads tell the two apart: a
queue raises the median with the load, a heavy tail does not.
"""

from __future__ import annotations

import math
from collections import deque

__all__ = ["LoadMedians", "level_of", "most_in_flight"]

#: The fewest answers a median is taken from.
_FEWEST = 8
#: ``base`` and ``current`` are recomputed after this many answers (each a sort of at most
#: a few hundred latencies), and when the limit enters a new level.
_RECOMPUTE_EVERY = 16


def level_of(limit: float) -> int:
    """Levels of load a factor of sqrt(2) apart: 1, 2, 3, 4-5, 6-7, 8-11, 12-15, ..."""
    return int(2 * math.log2(max(1.0, limit)))


def most_in_flight(level: int) -> int:
    """The most calls in flight at ``level``: the limit is below ``2 ** ((level + 1) / 2)``
    there, and whole calls are in flight (3 at the level of limits 2.83 to 3.99)."""
    return math.ceil(2 ** ((level + 1) / 2)) - 1


def known_median(values: list[float], tolerance: float) -> float | None:
    """The median of ``values`` once it is known to within ``tolerance`` (its standard
    error, relative, estimated from the interquartile range), else None: a few answers
    settle a steady server's latency, a heavy tail needs a few hundred."""
    n = len(values)
    if n < _FEWEST:
        return None
    ordered = sorted(values)
    median = ordered[(n - 1) // 2]
    if median <= 0:
        return median
    spread = ordered[(3 * n) // 4] - ordered[n // 4]
    return median if 0.93 * spread / math.sqrt(n) <= tolerance * median else None


class LoadMedians:
    """The last ``window`` latencies at each level of load; ``base`` (the median at the
    lowest loads) and ``current`` (the current level's median), each once known to within
    ``tolerance``."""

    def __init__(self, window: int = 200, tolerance: float = 0.1) -> None:
        self.window, self.tolerance = window, tolerance
        self.levels: dict[int, deque[float]] = {}
        self.base: float | None = None
        #: the lowest loads' plain median while ``base`` is not known closely yet (at least
        #: 16 answers): good enough to let a call faster than it count as unqueued
        self.rough_base: float | None = None
        self.current: float | None = None
        #: whether ``base`` and ``current`` are kept up to date (only a heavy-tailed lane
        #: reads them; the others only collect latencies)
        self.active = False
        #: the fastest answer at any load: a lower bound of the server's time per call
        self.fastest = float("inf")
        self._since = 0
        self._top = 0
        self._touched: set[int] = set()  # levels added to since the last spread test

    def add(self, latency_s: float, limit: float) -> None:
        top = self._top = level_of(limit)
        level = self.levels.get(top)
        if level is None:
            level = self.levels[top] = deque(maxlen=self.window)
            self._since = _RECOMPUTE_EVERY  # a new level: look again now
        level.append(latency_s)
        if latency_s < self.fastest:
            self.fastest = latency_s
        self._touched.add(top)
        self._since += 1
        if self.active and self._since >= _RECOMPUTE_EVERY:
            self._since = 0
            self._recompute(top)

    def activate(self) -> None:
        """Keep ``base`` and ``current`` from now on (the lane reads medians)."""
        self.active = True
        self._since = 0
        self._recompute(self._top)

    def too_spread_for_a_queue(self) -> bool:
        """Whether the median at some load is further above the fastest answer than any
        queue at that load could put it: with ``n`` calls in flight a call waits behind at
        most ``n - 1`` others, so a queue raises latency at most ``n``-fold over the
        server's time per call (Little's law; half again for jitter). Wider, the spread is
        the server's own.

        The fastest answer is taken at any load: a queue never makes a call faster, so it
        bounds the server's time per call from below wherever it was seen. The lowest
        loads are pooled until they hold enough answers (all of them made with at most
        ``n`` in flight): a lane cut back to a few calls in flight, whose limit moves
        between 2, 3 and 4, tells a heavy tail from a queue after a few dozen answers.
        Only levels added to since the last test are looked at again."""
        touched, self._touched = self._touched, set()
        fastest = self.fastest
        if not touched or not fastest > 0:
            return False
        pooled: list[float] = []
        pool_touched = False
        for key in sorted(self.levels):
            pooled.extend(self.levels[key])
            pool_touched = pool_touched or key in touched
            if len(pooled) >= 2 * _FEWEST:
                if pool_touched and _spread(pooled, key, fastest):
                    return True
                break
        return any(_spread(list(self.levels[key]), key, fastest) for key in touched
                   if len(self.levels[key]) >= 2 * _FEWEST)

    def _recompute(self, top: int) -> None:
        """``base``: the median of the answers at the lowest loads (the levels below the
        current one pooled from the lowest up until their median is known; the current
        level too when they are not enough); ``current``: the current level's median."""
        pooled: list[float] = []
        base = None
        for key in sorted(k for k in self.levels if k < top):
            pooled.extend(self.levels[key])
            base = known_median(pooled, self.tolerance)
            if base is not None:
                break
        mine = list(self.levels[top])
        if base is None:
            base = known_median(pooled + mine, self.tolerance)
        self.base = base
        self.current = known_median(mine, self.tolerance)
        everything = sorted(pooled + mine)
        self.rough_base = everything[(len(everything) - 1) // 2] if len(everything) >= 2 * _FEWEST else None


def _spread(latencies: list[float], level: int, fastest: float) -> bool:
    """Whether the median of ``latencies`` (made at ``level`` or below) is beyond what a
    queue could make of ``fastest`` (a rough median will do: the test is for a spread
    several times the load)."""
    latencies.sort()
    return latencies[(len(latencies) - 1) // 2] > 1.5 * most_in_flight(level) * fastest
