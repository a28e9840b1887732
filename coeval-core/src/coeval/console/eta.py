"""The ETA of a phase, from the rate items finished at over the last half minute.

rich's own estimate averages the speed of the last updates and keeps it while nothing
finishes, so a phase whose calls all wait on retries (a 429 storm, a server restarting)
or on a batch job shows ``0:00:01`` for minutes. Here the rate is measured over a window
that ends *now*: while nothing finishes the rate falls and the ETA grows, and a window in
which nothing finished gives no ETA at all (``-:--:--``) rather than a stale one. Retries
count as they should: a retried call finishes later, which is what the rate sees.

    eta = RecentRate(window_s=30.0)          # clock: time.monotonic, injectable for tests
    eta.observe(done)                        # on every redraw
    eta.seconds_left(done, total)            # None while the rate is unknown or zero

Until the recent rate is known (a phase's first second, or a pipelined phase whose first
items wait on its upstream), the ETA is the plan's: the seconds the time model of
``coeval plan`` (:mod:`coeval.planning.cost`) gave the phase, which the run records in
``cost_estimate.json`` before it starts, less what the phase has done (:func:`planned_left`).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

__all__ = ["RecentRate", "format_eta", "hms", "planned_left"]


class RecentRate:
    """Items finished per second over the last ``window_s`` seconds."""

    def __init__(self, window_s: float = 30.0, *, min_span_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.window_s = window_s
        self.min_span_s = min_span_s
        self._clock = clock
        self._samples: deque[tuple[float, int]] = deque()

    def observe(self, count: int) -> None:
        """Note that ``count`` items have finished by now."""
        now = self._clock()
        samples = self._samples
        if samples and samples[-1][1] == count and len(samples) >= 2 and samples[-2][1] == count:
            samples[-1] = (now, count)  # a flat stretch needs only its two ends
        else:
            samples.append((now, count))
        # the oldest sample kept is the newest one at or before the window's start
        while len(samples) >= 2 and samples[1][0] <= now - self.window_s:
            samples.popleft()

    def rate(self) -> float | None:
        """Items per second over the window; None until it spans ``min_span_s``."""
        if len(self._samples) < 2:
            return None
        (t0, c0), (_, c1) = self._samples[0], self._samples[-1]
        span = self._clock() - t0  # up to now: a stretch with nothing finished lowers the rate
        if span < self.min_span_s:
            return None
        return max(0, c1 - c0) / span

    def seconds_left(self, count: int, total: int) -> float | None:
        """Seconds until ``total`` at the recent rate: 0 when done, None when unknown or stalled."""
        self.observe(count)
        left = total - count
        if left <= 0:
            return 0.0
        rate = self.rate()
        if not rate:
            return None
        return left / rate


def planned_left(planned_s: float, done: int, total: int, elapsed_s: float) -> float:
    """Seconds left of a phase the plan gave ``planned_s``: its share not done yet, and at
    least the plan's time not yet spent (a phase that has done nothing yet is not late)."""
    if total <= 0 or done >= total:
        return 0.0
    return max(planned_s * (1.0 - done / total), planned_s - elapsed_s, 0.0)


def hms(seconds: float) -> str:
    """``0:12:04``: a duration as rich's time columns show it."""
    whole = max(0, int(seconds + 0.5))
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def format_eta(seconds: float | None) -> str:
    """``ETA 0:01:23``, or ``ETA -:--:--`` when unknown."""
    return "ETA -:--:--" if seconds is None else f"ETA {hms(seconds)}"
