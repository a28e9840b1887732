"""Adaptive concurrency for one connection (provider + credential): AIMD with slow start.

Providers publish rate limits per key, and a key is shared by every model a config sends
through it, so the limit lives per :meth:`Interface.connection_key`, not per model.

* **Slow start**: from ``initial`` the limit grows by one per successful call (doubling
  every round trip) until it reaches ``threshold`` (at first ``maximum``), so a fast
  provider is saturated within a few round trips.
* **Additive increase**: past the threshold it grows by ``1 / limit`` per success, about one
  slot per round trip.
* **Multiplicative decrease** on a rate-limit signal: the limit is multiplied by
  ``decrease_factor`` and the threshold set there. Calls that were already in flight when
  the limit last shrank answer from the same overloaded window, so their 429s do not shrink
  it again (one cut per window, as TCP does).
* **Queue-aware mode** (``queue_aware=True``, for self-hosted servers that queue instead of
  answering 429): see :class:`~coeval.scheduler.latency.LatencyGradient`. Each successful
  call's latency estimates how many calls wait in the server's queue; the limit grows
  while that queue is short and shrinks by one per round trip while it is long. A call
  that times out counts as a rate-limit signal, so a flooded server is relieved at once.
  A lane past its threshold whose latency shows no queue for a whole round trip goes back
  to slow start: two models on one 16-slot server, once one's items ended, left a third of
  it idle while the other grew by one call per round trip.
"""

from __future__ import annotations

import attrs

from coeval.scheduler.latency import LatencyGradient

__all__ = ["AdaptiveLimit", "LimitCounters"]


@attrs.define
class LimitCounters:
    """What the limiter did, for stats and tests."""

    increases: int = 0
    decreases: int = 0
    ignored_signals: int = 0  # 429s from calls started before the last cut
    lowest: int = 0
    highest: int = 0


class AdaptiveLimit:
    __slots__ = (
        "_empty_answers",
        "_last_cut_seq",
        "_limit",
        "_next_start",
        "_resume_at_base",
        "counters",
        "decrease_factor",
        "gradient",
        "maximum",
        "minimum",
        "threshold",
    )

    def __init__(
        self,
        initial: int,
        maximum: int,
        *,
        minimum: int = 1,
        decrease_factor: float = 0.5,
        queue_aware: bool = False,
    ) -> None:
        self.maximum = max(1, int(maximum))
        self.minimum = max(1, min(int(minimum), self.maximum))
        start = min(max(int(initial), self.minimum), self.maximum)
        self._limit = float(start)
        self.threshold = float(self.maximum)
        self.decrease_factor = decrease_factor
        self._next_start = 0
        self._last_cut_seq = -1
        self._resume_at_base = False
        self._empty_answers = 0.0
        self.counters = LimitCounters(lowest=start, highest=start)
        self.gradient: LatencyGradient | None = LatencyGradient() if queue_aware else None

    def cap(self, maximum: int) -> None:
        """Lower the bound (another model on the same lane allows fewer calls in flight)."""
        maximum = max(1, int(maximum))
        if maximum >= self.maximum:
            return
        self.maximum = maximum
        self.minimum = min(self.minimum, maximum)
        self._limit = min(self._limit, float(maximum))
        self.threshold = min(self.threshold, float(maximum))

    @property
    def current(self) -> int:
        """Calls that may be in flight now."""
        return int(self._limit)

    def started(self) -> int:
        """Note a call start; returns its sequence number for :meth:`rate_limited`."""
        seq = self._next_start
        self._next_start = seq + 1
        return seq

    def succeeded(self, latency_s: float | None = None, now: float = 0.0, in_flight: int | None = None) -> None:
        """A call answered; ``latency_s`` (its wall time, at time ``now``) feeds the
        queue-aware mode. ``in_flight`` is how many calls were in flight when it started:
        a limit less than half used does not grow (an instant interface, or a phase's tail,
        would otherwise raise it to its bound without ever using it, and each unit of limit
        is a worker task the event loop must turn)."""
        if self.gradient is not None and latency_s is not None:
            was_heavy_tailed = self.gradient.heavy_tailed
            verdict = self.gradient.observe(latency_s, self._limit, now)
            if self.gradient.heavy_tailed and not was_heavy_tailed:
                # the cuts so far read a heavy tail as a queue: slow start again, up to the
                # highest limit the lane had reached; past it, once the lowest loads' median
                # is known (a queue beyond that limit then shows in the medians)
                self.threshold = max(self._limit, float(self.counters.highest))
                self._resume_at_base = True
            elif self._resume_at_base and self.gradient.base_known:
                self._resume_at_base = False
                self.threshold = float(self.maximum)
            if verdict < 0 and self.gradient.target is not None:
                self._shrink_to(self.gradient.target)
                return
            if verdict == 0:
                self._empty_answers = 0.0
                return
            self._note_room(in_flight)
        if self._limit >= self.maximum or (in_flight is not None and 2 * in_flight < self._limit):
            return
        before = int(self._limit)
        if self._limit < self.threshold:
            self._limit = min(self._limit + 1.0, self.threshold)
        else:
            self._limit = min(self._limit + 1.0 / self._limit, float(self.maximum))
        after = int(self._limit)
        if after > before:
            self.counters.increases += 1
            self.counters.highest = max(self.counters.highest, after)

    def _note_room(self, in_flight: int | None) -> None:
        """Past the threshold, a lane whose latency shows no queue for a whole round trip
        (as many answers as its limit) while it uses its limit goes back to slow start: the
        server has room (another lane's calls ended, a replica came back), and growing by
        one call per round trip would take the rest of the phase to find it."""
        gradient = self.gradient
        assert gradient is not None
        used = in_flight is None or 2 * in_flight >= self._limit
        # (a heavy tail's medians by load are too coarse to tell room from a short queue)
        if (self._limit < self.threshold or not used or gradient.heavy_tailed
                or gradient.queue(self._limit) >= gradient.alpha(self._limit) / 2):
            self._empty_answers = 0.0
            return
        self._empty_answers += 1.0
        if self._empty_answers >= self._limit:
            self._empty_answers = 0.0
            self.threshold = float(self.maximum)

    def rate_limited(self, seq: int) -> bool:
        """A call started as ``seq`` was throttled. Returns whether the limit shrank."""
        if seq <= self._last_cut_seq:
            self.counters.ignored_signals += 1
            return False
        self._last_cut_seq = self._next_start - 1
        self._limit = max(float(self.minimum), self._limit * self.decrease_factor)
        self.threshold = max(float(self.minimum), self._limit)
        self.counters.decreases += 1
        self.counters.lowest = min(self.counters.lowest, int(self._limit))
        return True

    def _shrink_to(self, target: float) -> None:
        """Queue-aware decrease: straight to the server's estimated capacity, out of slow start."""
        before = int(self._limit)
        self._limit = max(float(self.minimum), min(self._limit, target))
        self.threshold = min(self.threshold, self._limit)
        now = int(self._limit)
        if now < before:
            self.counters.decreases += 1
            self.counters.lowest = min(self.counters.lowest, now)
