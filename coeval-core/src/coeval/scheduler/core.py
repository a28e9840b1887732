"""The scheduler: runs a phase's work items on asyncio, fast and without losing anything.

Contract used by the phases -- keep it stable::

    scheduler = Scheduler(interfaces, limits, progress=reporter, batch_executor=executor)
    stats = await scheduler.run(phase_id, items)

``interfaces`` maps model name -> a ready :class:`~coeval.interfaces.Interface`. ``run``
returns when every item has had its ``on_done(outcome)`` called -- exactly once,
synchronously, in the event-loop thread -- and the same ``Scheduler`` is reused for every
phase of a run, so quotas, spend and the learned concurrency carry over between phases.

How it runs (see DESIGN.md section 3), each part a collaborator the scheduler owns:

* **Lanes** (:class:`~coeval.scheduler.router.Router`). Items are grouped by their
  interface's ``connection_key()`` (provider + credential): each group is a *lane* with a
  queue and an :class:`AdaptiveLimit`. A model served by several replicas gets one lane per
  replica sharing one queue (:mod:`coeval.scheduler.lanes`), so each replica's limit follows
  its own capacity.
* **Workers** (:class:`~coeval.scheduler.workers.Workers`). A lane runs as many worker tasks
  as its current limit; each worker pulls the next item from the queue, so a phase of
  10,000 items costs a few dozen tasks, not 10,000.
* **Streaming** (:class:`~coeval.scheduler.intake.Intake`). Items are taken from ``items``
  as the lanes need them: at most a few times the lanes' concurrency routed and not yet
  done, so a phase of millions of items starts its first call at once and holds
  O(concurrency) items in memory. (A list or tuple, already built, and any phase with a
  batch executor -- a batch job needs all its items at once -- are routed whole before the
  first call.) When the phase stops early, items never taken from the iterable are not
  built: they get no ``on_done`` and are counted in ``SchedulerStats.unstarted``.
* **Calls** (:class:`~coeval.scheduler.calls.Caller`): one at a time per worker, its reply
  parsed. **Retries** (:class:`~coeval.scheduler.retry.Retries`) follow :class:`RetryPolicy`:
  an item waiting for its backoff leaves the queue and rejoins it when the wait is over; a
  ``Retry-After`` also pauses the whole lane. **Servers** that refuse or time out are
  waited for, replicas ejected and probed (:class:`~coeval.scheduler.lane_health.LaneHealth`).
* **Quota** (calls per model, :class:`~coeval.scheduler.allowance.Allowance`) is reserved
  before each call, so it is exact under any concurrency; an item that cannot reserve is
  ``skipped``/``quota`` and leaves a gap that ``--continue`` fills once the quota is raised.
  **Budget**: a call starts only if the spend reported by results plus the calls in flight
  at their estimated cost leave room for it; near the limit it waits for those in flight to
  settle (:mod:`coeval.scheduler.admission`). With a ``journal`` each call is written down
  before it is sent and after it returns (the run's call ledger).
* **Outcomes** (:class:`~coeval.scheduler.outcomes.Outcomes`): each item's ``on_done``,
  counted in the stats and progress. Batch items go to the batch executor
  (:class:`~coeval.scheduler.batch.BatchHandoff`).
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
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sized
from concurrent.futures import Future
from typing import TYPE_CHECKING

from coeval.config.credentials import redact
from coeval.interfaces.base import Interface
from coeval.scheduler.adaptive import AdaptiveLimit
from coeval.scheduler.admission import Admission, CallJournal
from coeval.scheduler.allowance import Allowance
from coeval.scheduler.batch import BatchExecutor, BatchHandoff
from coeval.scheduler.calls import Caller
from coeval.scheduler.clock import Clock, SystemClock
from coeval.scheduler.intake import Intake
from coeval.scheduler.job import Job
from coeval.scheduler.lane_health import LaneHealth
from coeval.scheduler.lanes import Lane
from coeval.scheduler.limits import SchedulerLimits
from coeval.scheduler.outcomes import Outcomes
from coeval.scheduler.phase_run import PhaseRun, Tracker
from coeval.scheduler.retry import Retries
from coeval.scheduler.router import Router
from coeval.scheduler.stats import SchedulerStats, lane_stats
from coeval.scheduler.work import WorkItem
from coeval.scheduler.workers import Workers

log = logging.getLogger("coeval.scheduler")

if TYPE_CHECKING:
    from coeval.console.progress import ProgressReporter

__all__ = ["Scheduler"]


class Scheduler:
    """Runs work items with adaptive per-connection concurrency, one retry policy, quotas,
    a budget and cancellation. See the module docstring for the contract and its parts."""

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
        self.limits = limits = limits or SchedulerLimits()
        self.progress = progress
        self.batch_executor = batch_executor
        self.clock: Clock = clock or SystemClock()
        self.rng = rng or random.Random()
        #: Where each call is written before it is sent (the run's call ledger), or None.
        self.journal = journal
        # the parts, each given the parts below it; the two steps a lower part hands up
        # (a streamed phase's next items, a worker's next call) go through _refill and _attempt
        self.allowance = Allowance(limits.quota, limits.budget_usd, calls_before=limits.calls_before,
                                   spend_before_usd=limits.spend_before_usd)
        #: The budget's view of the calls in flight (:mod:`coeval.scheduler.admission`).
        self.admission = Admission(limits.budget_usd, limits.call_estimates_usd)
        self.router = Router(interfaces)
        self.outcomes = Outcomes(self.allowance, self.admission, journal, refill=self._refill)
        self.workers = Workers(self.clock, attempt=self._attempt, refill=self._refill)
        self.intake = Intake(interfaces, self.router, self.outcomes, self.workers,
                             batched=batch_executor.wants if batch_executor is not None else None)
        self.retries = Retries(limits.retry, limits.max_attempts, self.clock, self.rng, self.outcomes, self.workers)
        self.health = LaneHealth(self.clock, self.allowance, self.outcomes, self.workers, say=self.say)
        self.caller = Caller(limits, self.allowance, self.admission, journal, self.clock, outcomes=self.outcomes,
                             retries=self.retries, health=self.health, workers=self.workers)
        self.batches = BatchHandoff(batch_executor, self.allowance, self.admission, journal, self.outcomes) \
            if batch_executor is not None else None
        self._runs: set[PhaseRun] = set()
        # an executor that retries rejected batch replies in real time draws on this
        # scheduler's quota and budget: tell it which scheduler hands it items
        attach = getattr(batch_executor, "attach", None)
        if callable(attach):
            attach(self)

    # ------------------------------------------------------------------ public API

    @property
    def calls(self) -> Counter[str]:
        """Calls made per model, counting ``limits.calls_before``."""
        return self.allowance.calls

    @calls.setter
    def calls(self, counter: Counter[str]) -> None:  # schedulers that share one quota share the counter
        self.allowance.calls = counter

    @property
    def spend_usd(self) -> float:
        """Spend reported by results so far, counting ``limits.spend_before_usd``."""
        return self.allowance.spend_usd

    @spend_usd.setter
    def spend_usd(self, usd: float) -> None:  # another shard's spend, learned from meta.json
        self.allowance.spend_usd = usd

    def cancel(self) -> None:
        """Stop starting calls. Calls in flight finish and are recorded; every item not yet
        done is reported ``skipped``/``cancelled``. Safe to call from a signal handler
        installed with ``loop.add_signal_handler``."""
        self.stop_all("cancelled")

    def stop_all(self, reason: str) -> None:
        """:meth:`cancel`, with ``reason`` as the cause of the items left (a full disk
        stopped the run, not a Ctrl-C)."""
        for run in list(self._runs):
            self.outcomes.stop(run, reason)

    def limiter(self, connection_key: str) -> AdaptiveLimit | None:
        """The adaptive limit learned for a connection (for status displays and tests)."""
        return self.router.limiter(connection_key)

    def quota_left(self, model_name: str) -> int | None:
        return self.allowance.quota_left(model_name)

    def say(self, line: str) -> None:
        """One console line for the user (and the log: a warning only when not printed, so the
        console does not show it twice)."""
        printed = self.progress is not None and self.progress.summary
        (log.info if printed else log.warning)("%s", redact(line))
        if printed:
            assert self.progress is not None
            self.progress.say(redact(line))

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
        run = PhaseRun(phase_id, stats, tracker)
        self._runs.add(run)
        later = getattr(items, "total_later", None)  # a count still running (coeval.phases._items)
        if isinstance(later, Future):
            expected = None  # the first call does not wait for it: the total comes when counted
            later.add_done_callback(self._on_total(run, asyncio.get_running_loop()))
        else:
            expected = len(items) if isinstance(items, Sized) else None
        try:
            await self._run(run, items, expected)
        finally:
            self._runs.discard(run)
            if (expected is None and isinstance(later, Future) and later.done() and not later.cancelled()
                    and later.exception() is None):
                expected = later.result()  # counted while the items ran
            self._close(run, expected, counted_later=isinstance(later, Future), started=loop_time)
        if run.on_done_error is not None:
            raise run.on_done_error
        return stats

    # ------------------------------------------------------------------ one run

    async def _run(self, run: PhaseRun, items: Iterable[WorkItem], expected: int | None) -> None:
        """Route the items (or start streaming them), start the lanes' workers, and wait
        until every item is reported or the run stops."""
        if self.batches is not None or isinstance(items, (list, tuple)):
            batch_jobs = self.intake.route(run, items)
        else:  # streamed: items are built as the lanes need them
            batch_jobs = []
            self.intake.stream(run, items)
        run.stats.total = expected if expected is not None else run.routed
        if run.tracker is not None:
            run.tracker.total = run.stats.total
        if batch_jobs and self.batches is not None:
            self.batches.start(run, batch_jobs)
        self.intake.refill(run)
        for lane in run.lanes.values():
            self.workers.spawn(run, lane)
        run.settle()
        try:
            await run.finished.wait()
        except asyncio.CancelledError:
            self.outcomes.stop(run, "cancelled")
            await run.cancel_tasks()
            self.outcomes.sweep(run)
            raise
        if run.stopping:
            await run.cancel_tasks()
        self.outcomes.sweep(run)
        await run.cancel_tasks()

    def _close(self, run: PhaseRun, expected: int | None, *, counted_later: bool, started: float) -> None:
        """The run's final figures, and its progress display finished."""
        stats, tracker = run.stats, run.tracker
        if run.source is not None:  # stopped before every item was taken
            run.source = None
            if expected is not None:
                stats.unstarted = max(0, expected - run.routed)
                if tracker is not None and stats.unstarted:
                    tracker.items_skipped(stats.unstarted, run.stop_reason)
        stats.total = expected if expected is not None else run.routed
        if tracker is not None and counted_later:  # the count may not have come yet
            tracker.total = stats.total
        stats.calls = Counter(self.allowance.calls)
        stats.spend_usd = self.allowance.spend_usd
        stats.cancelled = run.stopping and run.stop_reason == "cancelled"
        stats.wall_s = self.clock.now() - started
        for key, lane in run.lanes.items():
            stats.lanes[key] = lane_stats(lane)
        if tracker is not None:
            tracker.finish()

    def _on_total(self, run: PhaseRun, loop: asyncio.AbstractEventLoop) -> Callable[[Future[int]], None]:
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

    # ------------------------------------------------------------------ the steps handed up

    def _refill(self, run: PhaseRun) -> None:
        """A streamed phase's next items (for the outcomes and the workers, built before the intake)."""
        self.intake.refill(run)

    def _attempt(self, run: PhaseRun, lane: Lane, job: Job) -> Awaitable[None]:
        """A worker's next call (for the workers, built before the caller)."""
        return self.caller.attempt(run, lane, job)
