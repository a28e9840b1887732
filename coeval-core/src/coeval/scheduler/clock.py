"""Time as the scheduler sees it: injectable, so tests of backoff never sleep for real.

The scheduler only ever asks "what time is it" and "wait this long". :class:`SystemClock`
answers with the event loop's monotonic clock; :class:`ManualClock` records every wait and
advances its own time instantly, so a test can assert that a ``Retry-After: 30`` made the
scheduler wait 30 seconds without spending them.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

__all__ = ["Clock", "ManualClock", "SystemClock"]


class Clock(Protocol):
    def now(self) -> float:
        """Monotonic seconds."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` (never negative)."""
        ...


class SystemClock:
    """Real time: ``time.monotonic`` and ``asyncio.sleep``."""

    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


class ManualClock:
    """Virtual time for tests.

    ``sleep(d)`` records ``d``, moves the clock forward to at least ``now + d`` and yields
    once to the event loop. Sleeps of concurrent tasks overlap: the clock moves to the
    furthest wake-up time any sleeper asked for, as real time would.
    """

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        #: Every wait requested, in order.
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        seconds = max(0.0, seconds)
        self.sleeps.append(seconds)
        wake = self._now + seconds
        await asyncio.sleep(0)
        self._now = max(self._now, wake)

    def advance(self, seconds: float) -> None:
        self._now += seconds
