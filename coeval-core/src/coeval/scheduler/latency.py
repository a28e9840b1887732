"""Queue-aware concurrency for self-hosted servers, in the spirit of TCP Vegas.

A local inference server (vLLM, SGLang, TGI, llama.cpp's server, Ollama) does not answer
429 when it is full: it queues. More calls in flight then buy no throughput, only latency,
and queue time counts against the client's ``timeout``. So besides rate-limit signals the
limiter watches latency:

* ``min_rtt`` is the lowest latency of calls made at the current load or a lower one.
  Answers are grouped by the limit they were made under, in levels of powers of two (4-7,
  8-15, ...); each level keeps a moving minimum over its current and previous window of
  :attr:`LatencyGradient.window` answers (it follows a server that became slower, e.g.
  after a restart with another model, once the limit comes back down to that level). A
  level above does not lower the floor of the one below: a queue that has lasted a
  while is still seen as one, not taken for the server's new speed.
* ``srtt`` is an exponentially weighted mean of latency (weight :attr:`smoothing`).
* With ``limit`` calls in flight, ``queue = limit * (1 - min_rtt / srtt)`` estimates how
  many of them wait in the server's queue rather than being served (Little's law).
* At most once per ``srtt`` the limit is adjusted: when ``queue > beta`` it is set to
  ``limit * min_rtt / srtt + alpha`` (the server's estimated capacity plus a small queue,
  so the server never idles); when ``queue < alpha``, and the call's own latency also
  shows a queue under ``alpha``, it may grow as usual (slow start, then additive
  increase); otherwise it holds. (The smoothed latency lags a round trip behind: without
  the second test, slow start overshoots a small server by several calls.)
* ``alpha = max(1, 0.2 * limit)`` and ``beta = 2 * alpha`` calls: latency may rise 25%
  over ``min_rtt`` before growth stops and must rise by two thirds before the limit
  shrinks, so the jitter of a busy client, a gateway or a shared machine is not taken for
  a queue (with a 5% margin, 200 ms answers with 15 ms of jitter held a loopback server
  that never queued at about 29 calls in flight). Below 5 calls the floor is one queued
  call, not two: two lanes on one small server (two models it serves) each kept two
  queued, and the second lane, whose first answers came through the first one's queue,
  took that queue for the server's speed and grew until its calls timed out (73 requests
  for 60 items on 2 slots).

Latency differences under :attr:`noise_floor_s` are ignored, so instant replies (mocks,
caches) never look like queueing.

**Heavy tails.** A queue raises latency at most as many times as there are calls in flight
(each call waits behind the others at most). When the median latency at some load is
further above the fastest answer at any load than that (half again, for jitter), the
spread is the server's own (a provider behind a local gateway: lognormal, its fastest
answers 20 times faster than its mean), and ``min_rtt`` no longer stands for the server's
speed. From then on the lane compares *medians* by level of load instead
(:class:`~coeval.scheduler.latency_medians.LoadMedians`): ``base``, the median at the
lowest loads, for ``min_rtt``, and the current level's median for ``srtt``; a queue still
raises the median with the load, a heavy tail does not. (The limiter's slow start then
goes back to the highest limit it had reached, and past it once ``base`` is known:
:attr:`base_known`.) A server that queues with steady latency never gets there, so it
keeps the quicker fastest-answer test (a 2-slot replica is cut back within a few calls of
its capacity).
"""

from __future__ import annotations

import math

import attrs

from coeval.scheduler.latency_medians import LoadMedians

__all__ = ["LatencyGradient"]

GROW = 1
HOLD = 0


@attrs.define
class _LevelMin:
    """The lowest latency of answers made at one level of load: a moving minimum over the
    current and previous window of answers at that level."""

    window_min: float = float("inf")
    previous_min: float = float("inf")
    samples: int = 0

    def add(self, latency_s: float, window: int) -> None:
        self.samples += 1
        self.window_min = min(self.window_min, latency_s)
        if self.samples >= window:
            self.previous_min, self.window_min, self.samples = self.window_min, float("inf"), 0

    @property
    def floor(self) -> float:
        return min(self.window_min, self.previous_min)


def _level(limit: float) -> int:
    """Levels of load in powers of two: 1, 2-3, 4-7, 8-15, ..."""
    return int(math.log2(max(1.0, limit)))


@attrs.define
class LatencyGradient:
    """Latency book-keeping of one lane; :meth:`observe` says whether the limit may grow."""

    window: int = 200
    smoothing: float = 0.2
    noise_floor_s: float = 0.002
    min_alpha: float = 1.0
    alpha_share: float = 0.2
    min_rtt: float | None = None
    srtt: float | None = None
    target: float | None = None
    #: set once latency is spread wider than a queue could make it (see the module docstring)
    heavy_tailed: bool = False
    _levels: dict[int, _LevelMin] = attrs.field(factory=dict)
    _medians: LoadMedians = attrs.field(factory=LoadMedians)
    _next_adjust: float = 0.0
    _answers: int = 0
    #: when the smoothed latency last began to show a queue worth a cut (None: it does not)
    _queued_since: float | None = None

    def _update(self, latency_s: float, limit: float) -> None:
        level = self._levels.get(_level(limit))
        if level is None:
            level = self._levels[_level(limit)] = _LevelMin()
        level.add(latency_s, self.window)
        top = _level(limit)
        self.min_rtt = min(lv.floor for key, lv in self._levels.items() if key <= top)
        self.srtt = latency_s if self.srtt is None else self.srtt + self.smoothing * (latency_s - self.srtt)
        self._medians.add(latency_s, limit)
        self._answers += 1
        if not self.heavy_tailed and self._answers % 16 == 0 and self._medians.too_spread_for_a_queue():
            self.heavy_tailed = True
            self._medians.activate()

    def _speeds(self, latency_s: float | None) -> tuple[float | None, float | None]:
        """(the server's speed unqueued, the latency now): ``min_rtt`` and ``srtt``, or for a
        heavy tail the medians (until the lowest loads' median is known closely, the limit
        never shrinks on latency, and its plain median stands for it in the per-call test)."""
        if not self.heavy_tailed:
            return self.min_rtt, self.srtt if latency_s is None else latency_s
        medians = self._medians
        if latency_s is None:
            return medians.base, medians.current
        for base in (medians.base, medians.rough_base, self.min_rtt):
            if base is not None:
                return base, latency_s
        return None, latency_s

    @property
    def base_known(self) -> bool:
        """Whether the median latency at the lowest loads is known closely (heavy tails)."""
        return self._medians.base is not None

    def queue(self, limit: float, latency_s: float | None = None) -> float:
        """Estimated calls waiting in the server's queue with ``limit`` in flight, from the
        smoothed latency (or from one call's ``latency_s``)."""
        base, rtt = self._speeds(latency_s)
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
            self._queued_since = None
            return HOLD
        # a queue lasts; a stall of this process (every call in flight answering late at
        # once) is over within a round trip: cut only once the queue has lasted one
        if self._queued_since is None:
            self._queued_since = now
        if now - self._queued_since < (self.srtt or 0.0):
            return HOLD
        # one decrease per round trip: calls still in flight answer from the old queue
        if now < self._next_adjust:
            return HOLD
        base, rtt = self._speeds(None)
        assert base is not None and rtt is not None and self.srtt is not None
        self._next_adjust = now + self.srtt
        self.target = limit * base / rtt + alpha
        return -1
