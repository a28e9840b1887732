"""The scheduler: runs a phase's work items on asyncio, fast and without losing anything.

Contract used by the phases -- keep it stable::

    scheduler = Scheduler(interfaces, limits, progress=reporter, batch_executor=executor)
    stats = await scheduler.run(phase_id, items)

``interfaces`` maps model name -> a ready :class:`~coeval.interfaces.Interface`. ``run``
returns when every item has had its ``on_done(outcome)`` called -- exactly once,
synchronously, in the event-loop thread -- and the same ``Scheduler`` is reused for every
phase of a run, so quotas, spend and the learned concurrency carry over between phases.

How it runs (see DESIGN.md section 3):

* **Lanes.** Items are grouped by their interface's ``connection_key()`` (provider +
  credential): each group is a *lane* with a queue and an :class:`AdaptiveLimit`. A lane
  runs as many worker tasks as its current limit; each worker pulls the next item from
  the queue, so a phase of 10,000 items costs a few dozen tasks, not 10,000. A model
  served by several replicas gets one lane per replica sharing one queue
  (:mod:`coeval.scheduler.lanes`), so each replica's limit follows its own capacity.
* **Streaming.** Items are taken from ``items`` as the lanes need them: the scheduler
  keeps at most a few times the lanes' concurrency routed and not yet done, so a phase of
  millions of items starts its first call at once and holds O(concurrency) items in
  memory. (A list or tuple, already built, and any phase with a batch executor -- a batch
  job needs all its items at once -- are routed whole before the first call.) When the
  phase stops early, items never taken from the iterable are not built: they get no
  ``on_done`` and are counted in ``SchedulerStats.unstarted``.
* **Retries** follow :class:`RetryPolicy`. An item waiting for its backoff leaves the
  queue (its worker moves on to the next item) and rejoins it when the wait is over. A
  ``Retry-After`` also pauses the whole lane: the provider said the key is over its limit.
* **Quota** (calls per model) is reserved before each call, so it is exact under any
  concurrency; an item that cannot reserve is ``skipped``/``quota`` and leaves a gap that
  ``--continue`` fills once the quota is raised. **Budget**: a call starts only if the
  spend reported by results plus the calls in flight at their estimated cost leave room
  for it; near the limit it waits for those in flight to settle
  (:mod:`coeval.scheduler.admission`). With a ``journal`` each call is written down
  before it is sent and after it returns (the run's call ledger).
* **Cancellation.** :meth:`Scheduler.cancel` stops starting calls, lets calls in flight
  finish and be recorded, and reports the rest ``skipped``/``cancelled``. Cancelling the
  task that awaits ``run`` (Ctrl-C under ``asyncio.run``) does the same without waiting for
  calls in flight, then re-raises. A finished call's ``on_done`` is never lost.
* If ``on_done`` itself raises (a record could not be written: disk full, read-only
  folder), the phase stops as if cancelled and ``run`` re-raises that error once every
  other item has been reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sized
from concurrent.futures import Future
from typing import TYPE_CHECKING

import attrs

from coeval.config.credentials import redact
from coeval.interfaces.base import Interface, ModelError
from coeval.scheduler.adaptive import AdaptiveLimit
from coeval.scheduler.admission import Admission, CallJournal
from coeval.scheduler.batch import BatchExecutor
from coeval.scheduler.calls import Calls
from coeval.scheduler.clock import Clock, SystemClock
from coeval.scheduler.lanes import Slots, percentile
from coeval.scheduler.state import (
    DEFAULT_MAX_ATTEMPTS,
    UNWRITTEN,
    LaneStats,
    SchedulerLimits,
    SchedulerStats,
    Tracker,
    _PhaseRun,
    max_attempts_for,
)
from coeval.scheduler.work import WorkItem

log = logging.getLogger("coeval.scheduler")

if TYPE_CHECKING:
    from coeval.console.progress import ProgressReporter

__all__ = [
    "DEFAULT_MAX_ATTEMPTS", "UNWRITTEN", "LaneStats", "ModelError", "Scheduler", "SchedulerLimits", "SchedulerStats",
    "max_attempts_for",
]


class Scheduler(Calls):
    """Runs work items with adaptive per-connection concurrency, one retry policy, quotas,
    a budget and cancellation. See the module docstring for the contract."""

    def __init__(
        self,
        interfaces: Mapping[str, Interface],
        limits: SchedulerLimits | None = None,
        *,
        progress: ProgressReporter | None = None,
        batch_executor: BatchExecutor | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        journal: CallJournal | None = None,
    ) -> None:
        self.interfaces = interfaces
        self.limits = limits or SchedulerLimits()
        self.progress = progress
        self.batch_executor = batch_executor
        self.clock: Clock = clock or SystemClock()
        self.rng = rng or random.Random()
        #: Calls made per model, counting ``limits.calls_before``.
        self.calls: Counter[str] = Counter(self.limits.calls_before)
        #: Spend reported by results so far, counting ``limits.spend_before_usd``.
        self.spend_usd = float(self.limits.spend_before_usd)
        #: The budget's view of the calls in flight (:mod:`coeval.scheduler.admission`).
        self.admission = Admission(self.limits.budget_usd, self.limits.call_estimates_usd)
        #: Where each call is written before it is sent (the run's call ledger), or None.
        self.journal = journal
        self._limiters: dict[str, AdaptiveLimit] = {}
        self._slots: dict[str, Slots] = {}
        self._lane_keys: dict[str, str] = {}
        self._runs: set[_PhaseRun] = set()
        # an executor that retries rejected batch replies in real time draws on this
        # scheduler's quota and budget: tell it which scheduler hands it items
        attach = getattr(batch_executor, "attach", None)
        if callable(attach):
            attach(self)

    # ------------------------------------------------------------------ public API

    def cancel(self) -> None:
        """Stop starting calls. Calls in flight finish and are recorded; every item not yet
        done is reported ``skipped``/``cancelled``. Safe to call from a signal handler
        installed with ``loop.add_signal_handler``."""
        for run in list(self._runs):
            self._stop(run, "cancelled")

    def stop_all(self, reason: str) -> None:
        """:meth:`cancel`, with ``reason`` as the cause of the items left (a full disk
        stopped the run, not a Ctrl-C)."""
        for run in list(self._runs):
            self._stop(run, reason)

    def limiter(self, connection_key: str) -> AdaptiveLimit | None:
        """The adaptive limit learned for a connection (for status displays and tests)."""
        return self._limiters.get(connection_key)

    def quota_left(self, model_name: str) -> int | None:
        cap = self.limits.quota.get(model_name)
        return None if cap is None else max(0, cap - self.calls[model_name])

    async def run(self, phase_id: str, items: Iterable[WorkItem], *, tracker: Tracker | None = None) -> SchedulerStats:
        """Run ``items``; returns when each has had ``on_done`` called exactly once.

        Runs awaited concurrently (pipelined phases) share quota, spend, the learned
        concurrency limits and each connection's slots. ``tracker``: where this run's
        progress goes when the phase's items come in several runs (see
        :class:`~coeval.console.progress.TrackerPass`); by default each run is a phase of
        its own on the progress display.
        """
        loop_time = self.clock.now()
        stats = SchedulerStats(phase=phase_id)
        if tracker is None and self.progress is not None:
            tracker = self.progress.start_phase(phase_id, 0)
        run = _PhaseRun(phase_id, stats, tracker)
        self._runs.add(run)
        later = getattr(items, "total_later", None)  # a count still running (coeval.phases._items)
        if isinstance(later, Future):
            expected = None  # the first call does not wait for it: the total comes when counted
            later.add_done_callback(self._on_total(run, asyncio.get_running_loop()))
        else:
            expected = len(items) if isinstance(items, Sized) else None
        try:
            if self.batch_executor is not None or isinstance(items, (list, tuple)):
                batch_items = self._route(run, items)
            else:  # streamed: items are built as the lanes need them
                batch_items = []
                self._prepare_lanes()
                run.source = iter(items)
            stats.total = expected if expected is not None else run.routed
            if tracker is not None:
                tracker.total = stats.total
            if batch_items:
                self._start_batch(run, batch_items)
            self._refill(run)
            for lane in run.lanes.values():
                self._spawn_workers(run, lane)
            run.settle()
            try:
                await run.finished.wait()
            except asyncio.CancelledError:
                self._stop(run, "cancelled")
                await self._cancel_tasks(run)
                self._sweep(run)
                raise
            if run.stopping:
                await self._cancel_tasks(run)
            self._sweep(run)
            await self._cancel_tasks(run)
        finally:
            self._runs.discard(run)
            if (expected is None and isinstance(later, Future) and later.done() and not later.cancelled()
                    and later.exception() is None):
                expected = later.result()  # counted while the items ran
            if run.source is not None:  # stopped before every item was taken
                run.source = None
                if expected is not None:
                    stats.unstarted = max(0, expected - run.routed)
                    if tracker is not None and stats.unstarted:
                        tracker.items_skipped(stats.unstarted, run.stop_reason)
            stats.total = expected if expected is not None else run.routed
            if tracker is not None and isinstance(later, Future):  # the count may not have come yet
                tracker.total = stats.total
            stats.calls = Counter(self.calls)
            stats.spend_usd = self.spend_usd
            stats.cancelled = run.stopping and run.stop_reason == "cancelled"
            stats.wall_s = self.clock.now() - loop_time
            for key, lane in run.lanes.items():
                stats.lanes[key] = LaneStats(
                    limit=lane.limit.current,
                    peak_in_flight=lane.peak,
                    pauses=lane.pauses,
                    counters=attrs.evolve(lane.limit.counters),
                    url=lane.url,
                    models=tuple(lane.models),
                    calls=lane.calls,
                    ejections=lane.ejections,
                    latency_p50_ms=percentile(lane.latencies_ms, 0.50),
                    latency_p95_ms=percentile(lane.latencies_ms, 0.95),
                    queue_aware=lane.limit.gradient is not None,
                )
            if tracker is not None:
                tracker.finish()
        if run.on_done_error is not None:
            raise run.on_done_error
        return stats

    def _on_total(self, run: _PhaseRun, loop: asyncio.AbstractEventLoop) -> Callable[[Future[int]], None]:
        """What a count still running calls when done: the phase's total, for progress and
        ETA, set on the loop (counted in a thread; an error there leaves it unknown)."""

        def known(total: int) -> None:
            if run not in self._runs:  # over: its stats are final
                return
            run.stats.total = total
            if run.tracker is not None:
                run.tracker.total = total

        def done(future: Future[int]) -> None:
            if future.cancelled() or future.exception() is not None:
                return
            with contextlib.suppress(RuntimeError):  # the loop is closed: the run is over
                loop.call_soon_threadsafe(known, future.result())

        return done

    def _say(self, line: str) -> None:
        """One console line for the user (and the log: a warning only when not printed, so the
        console does not show it twice)."""
        printed = self.progress is not None and self.progress.summary
        (log.info if printed else log.warning)("%s", redact(line))
        if printed:
            assert self.progress is not None
            self.progress.say(redact(line))

