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
"""

from __future__ import annotations

import attrs

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
        "_last_cut_seq",
        "_limit",
        "_next_start",
        "counters",
        "decrease_factor",
        "maximum",
        "minimum",
        "threshold",
    )

    def __init__(self, initial: int, maximum: int, *, minimum: int = 1, decrease_factor: float = 0.5) -> None:
        self.maximum = max(1, int(maximum))
        self.minimum = max(1, min(int(minimum), self.maximum))
        start = min(max(int(initial), self.minimum), self.maximum)
        self._limit = float(start)
        self.threshold = float(self.maximum)
        self.decrease_factor = decrease_factor
        self._next_start = 0
        self._last_cut_seq = -1
        self.counters = LimitCounters(lowest=start, highest=start)

    @property
    def current(self) -> int:
        """Calls that may be in flight now."""
        return int(self._limit)

    def started(self) -> int:
        """Note a call start; returns its sequence number for :meth:`rate_limited`."""
        seq = self._next_start
        self._next_start = seq + 1
        return seq

    def succeeded(self) -> None:
        if self._limit >= self.maximum:
            return
        before = int(self._limit)
        if self._limit < self.threshold:
            self._limit = min(self._limit + 1.0, self.threshold)
        else:
            self._limit = min(self._limit + 1.0 / self._limit, float(self.maximum))
        now = int(self._limit)
        if now > before:
            self.counters.increases += 1
            self.counters.highest = max(self.counters.highest, now)

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
