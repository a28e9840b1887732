"""Queue-aware concurrency for self-hosted servers, in the spirit of TCP Vegas.

A local inference server (vLLM, SGLang, TGI, llama.cpp's server, Ollama) does not answer
429 when it is full: it queues. More calls in flight then buy no throughput, only latency,
and queue time counts against the client's ``timeout``. So besides rate-limit signals the
limiter watches whether latency *rises with the load*:

* Answers are grouped by the limit they were made under, in levels a factor of sqrt(2)
  apart (4-5, 6-7, 8-11, 12-15, ...). Each level keeps its last
  :attr:`LatencyGradient.window` latencies.
* ``base`` is the median latency at the lowest loads: the answers of the levels below the
  current one, pooled from the lowest up until their median is known to within
  :attr:`LatencyGradient.tolerance` (10%; a steady server's after 8 answers, a heavy tail's
  after a few hundred). A level above does not lower the one below: a queue that has lasted
  a while is still seen as one, not taken for the server's new speed. ``current`` is the
  current level's median, once known as closely. With ``limit`` calls in flight,
  ``queue = limit * (1 - base / current)`` estimates how many of them wait in the
  server's queue (Little's law).
  Medians, not the fastest answer against a mean: latency with a heavy tail (a provider
  behind a local gateway: lognormal, its fastest answers 20x faster than its mean) is not
  a queue unless it grows with the load.
* Growth: when ``queue < alpha``, and the call's own latency against ``base`` also shows
  a queue under ``alpha``, the limit may grow as usual (slow start, then additive
  increase). (A median is known only after some answers: without the second test, slow
  start would overshoot a small server by several calls.)
* At most once per smoothed round trip, when ``queue > beta``, the limit is set to
  ``limit * base / current + alpha`` (the server's estimated capacity plus a small queue,
  so the server never idles); between the two it holds.
* ``alpha = max(2, 0.2 * limit)`` and ``beta = 2 * alpha`` calls: latency may rise 25%
  before growth stops and must rise by two thirds before the limit shrinks, so jitter is
  not taken for a queue.
* Until ``base`` is known, the lowest latency seen stands in for it in the per-call test,
  and the limit never shrinks on latency.

Latency differences under :attr:`noise_floor_s` are ignored, so instant replies (mocks,
caches) never look like queueing.
"""

from __future__ import annotations

import math
from collections import deque

import attrs

__all__ = ["LatencyGradient"]

GROW = 1
HOLD = 0


class _Level:
    """The last ``window`` latencies of answers made at one level of load."""

    __slots__ = ("latencies",)

    def __init__(self, window: int) -> None:
        self.latencies: deque[float] = deque(maxlen=window)


#: ``base`` and ``current`` are recomputed after this many answers (each a sort of at most
#: a few hundred latencies), and when the limit enters a new level.
_RECOMPUTE_EVERY = 16


def _known_median(values: list[float], tolerance: float) -> float | None:
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


#: The fewest answers a median is taken from.
_FEWEST = 8


def _level(limit: float) -> int:
    """Levels of load a factor of sqrt(2) apart: 1, 2, 3, 4-5, 6-7, 8-11, 12-15, ..."""
    return int(2 * math.log2(max(1.0, limit)))


@attrs.define
class LatencyGradient:
    """Latency book-keeping of one lane; :meth:`observe` says whether the limit may grow."""

    window: int = 200
    #: how closely (relative standard error) a median must be known before it is used
    tolerance: float = 0.1
    smoothing: float = 0.2
    noise_floor_s: float = 0.002
    min_alpha: float = 2.0
    alpha_share: float = 0.2
    #: the lowest median of the levels at or below the current one (None: none is ready)
    base: float | None = None
    #: the current level's median (None: not ready)
    current: float | None = None
    lowest: float | None = None
    srtt: float | None = None
    target: float | None = None
    _levels: dict[int, _Level] = attrs.field(factory=dict)
    _next_adjust: float = 0.0
    _since: int = 0

    def _update(self, latency_s: float, limit: float) -> None:
        top = _level(limit)
        level = self._levels.get(top)
        if level is None:
            level = self._levels[top] = _Level(self.window)
            self._since = _RECOMPUTE_EVERY  # a new level: look again now
        level.latencies.append(latency_s)
        self.lowest = latency_s if self.lowest is None else min(self.lowest, latency_s)
        self.srtt = latency_s if self.srtt is None else self.srtt + self.smoothing * (latency_s - self.srtt)
        self._since += 1
        if self._since >= _RECOMPUTE_EVERY:
            self._since = 0
            self._recompute(top)

    def _recompute(self, top: int) -> None:
        """``base``: the median of the answers at the lowest loads (the levels below the
        current one pooled from the lowest up until their median is known; the current
        level too when they are not enough); ``current``: the current level's median."""
        tolerance = self.tolerance
        pooled: list[float] = []
        base = None
        for key in sorted(k for k in self._levels if k < top):
            pooled.extend(self._levels[key].latencies)
            base = _known_median(pooled, tolerance)
            if base is not None:
                break
        mine = list(self._levels[top].latencies)
        if base is None:
            base = _known_median(pooled + mine, tolerance)
        self.base = base
        self.current = _known_median(mine, tolerance)

    def queue(self, limit: float, latency_s: float | None = None) -> float:
        """Estimated calls waiting in the server's queue with ``limit`` in flight, from the
        current level's median (or from one call's ``latency_s``)."""
        base = self.base if self.base is not None or latency_s is None else self.lowest
        rtt = self.current if latency_s is None else latency_s
        if base is None or rtt is None or rtt - base < self.noise_floor_s:
            return 0.0
        return max(0.0, limit * (1.0 - base / rtt))

    def alpha(self, limit: float) -> float:
        return max(self.min_alpha, self.alpha_share * limit)

    def observe(self, latency_s: float, limit: float, now: float) -> int:
        """Feed one call's latency. Returns :data:`GROW`, :data:`HOLD`, or ``-1`` after
        setting :attr:`target` (the limit to drop to)."""
        self._update(latency_s, limit)
        alpha = self.alpha(limit)
        queue = self.queue(limit)
        if queue < alpha and self.queue(limit, latency_s) < alpha:
            return GROW
        if queue <= 2.0 * alpha:
            return HOLD
        # one decrease per round trip: calls still in flight answer from the old queue
        if now < self._next_adjust:
            return HOLD
        assert self.base is not None and self.current is not None and self.srtt is not None
        self._next_adjust = now + self.srtt
        self.target = limit * self.base / self.current + alpha
        return -1
