"""One ``Scheduler.run`` call's book-keeping: its items routed and not yet done, its lanes,
its tasks, whether it is stopping and why, and where its progress goes."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from typing import Any, Protocol

from coeval.scheduler.job import Job
from coeval.scheduler.lanes import Lane
from coeval.scheduler.stats import SchedulerStats
from coeval.scheduler.work import WorkItem

__all__ = ["UNWRITTEN", "PhaseRun", "Tracker"]

#: Why an item did not count as done: its call finished but its record could not be
#: written (a full disk, a read-only file); the phase stops with the write error.
UNWRITTEN = "unwritten"


class Tracker(Protocol):
    """What the scheduler tells a phase's progress display (``console.progress.PhaseTracker``)."""

    total: int

    def item_done(self, status: str, reason: str | None = None) -> None: ...
    def items_skipped(self, count: int, reason: str) -> None: ...
    def retried(self) -> None: ...
    def add_spend(self, usd: float) -> None: ...
    def finish(self) -> None: ...


class PhaseRun:
    """Book-keeping of one ``Scheduler.run`` call."""

    def __init__(self, phase_id: str, stats: SchedulerStats, tracker: Tracker | None) -> None:
        self.phase_id = phase_id
        self.stats = stats
        self.tracker = tracker
        #: Items routed and not yet done (their jobs).
        self.live: set[Job] = set()
        self.routed = 0
        self.remaining = 0
        #: Where further items come from (a streamed phase); None once exhausted.
        self.source: Iterator[WorkItem] | None = None
        self.refilling = False
        self.stopping = False
        self.stop_reason = "cancelled"
        self.finished = asyncio.Event()
        self.tasks: set[asyncio.Task[Any]] = set()
        self.lanes: dict[str, Lane] = {}
        #: connection key -> the lane its items are queued on (a replicated lane's first replica)
        self.entries: dict[str, Lane] = {}
        self.batch_running = False
        self.on_done_error: BaseException | None = None

    def settle(self) -> None:
        """Wake ``run`` when nothing is left to wait for."""
        if (self.remaining == 0 and self.source is None) or (
                self.stopping and not self.batch_running and all(ln.in_flight == 0 for ln in self.lanes.values())):
            self.finished.set()

    def start(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` as one of this run's tasks (cancelled when the run ends)."""
        task = asyncio.ensure_future(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def cancel_tasks(self) -> None:
        """Cancel this run's tasks still running, and wait for them to end."""
        tasks = [t for t in self.tasks if not t.done()]
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
