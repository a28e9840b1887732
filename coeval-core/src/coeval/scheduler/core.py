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
  ``--continue`` fills once the quota is raised. **Budget**: no call starts once the spend
  reported by results (``cost_usd``) reaches ``budget_usd``; calls in flight still finish.
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
import logging
import random
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sized
from typing import TYPE_CHECKING, Any

import attrs

from coeval.config.credentials import redact
from coeval.interfaces.base import (
    CallGivenBack,
    FatalModelError,
    Interface,
    ModelError,
    RateLimitError,
    TransientModelError,
    Usage,
)
from coeval.scheduler.adaptive import AdaptiveLimit, LimitCounters
from coeval.scheduler.batch import BatchExecutor
from coeval.scheduler.clock import Clock, SystemClock
from coeval.scheduler.correction import with_correction
from coeval.scheduler.lanes import TIMEOUTS_TO_EJECT, Lane, LaneQueue, lane_for_new_worker, percentile
from coeval.scheduler.prior import PriorAttempts
from coeval.scheduler.resample import resampled
from coeval.scheduler.retry import RetryPolicy
from coeval.scheduler.server_wait import is_connection_failure, is_timeout
from coeval.scheduler.work import OutputParseError, WorkItem, WorkOutcome

if TYPE_CHECKING:
    from coeval.console.progress import PhaseTracker, ProgressReporter

__all__ = ["LaneStats", "ModelError", "Scheduler", "SchedulerLimits", "SchedulerStats"]

log = logging.getLogger("coeval.scheduler")

#: Why an item did not count as done: its call finished but its record could not be
#: written (a full disk, a read-only file); the phase stops with the write error.
UNWRITTEN = "unwritten"

#: Workers yield to the event loop at least every this many calls, or once their turn has
#: lasted :data:`_TURN_S` seconds, so zero-latency interfaces (the mock) cannot starve the
#: progress display, signal handling or other lanes: with 512 workers, 32 calls each made a
#: turn of the loop last seconds, and SIGTERM waited for it.
_YIELD_EVERY = 32
_TURN_S = 0.002


#: Items routed and not yet done, at least (a streamed phase): see :meth:`Scheduler._refill`.
_MIN_BUFFER = 256
#: ... and at most this many times the lanes' current limits together.
_BUFFER_PER_SLOT = 4


#: Calls per item at most, all causes together, unless generation_retries asks for more.
DEFAULT_MAX_ATTEMPTS = 6


@attrs.define
class SchedulerLimits:
    """Run-wide limits.

    ``quota`` is the most calls each model may make (None or missing = unlimited), and
    ``calls_before`` what earlier processes of the same run already used (``--continue``),
    so the cap holds across restarts. Likewise ``budget_usd`` against ``spend_before_usd``.
    """

    generation_retries: int = 2  # extra attempts for unparseable output
    max_attempts: int = DEFAULT_MAX_ATTEMPTS  # hard bound on calls per item, all causes together
    quota: Mapping[str, int | None] = attrs.field(factory=dict)
    budget_usd: float | None = None
    calls_before: Mapping[str, int] = attrs.field(factory=dict)
    spend_before_usd: float = 0.0
    retry: RetryPolicy = attrs.field(factory=RetryPolicy)
    #: Seconds a single call may take before it counts as a transient failure (None: no
    #: limit beyond the interface's own timeout).
    call_timeout_s: float | None = 600.0


@attrs.define
class LaneStats:
    """One lane's concurrency as the adaptive limiter left it, and its calls in the phase."""

    limit: int
    peak_in_flight: int
    pauses: int
    counters: LimitCounters
    #: Where its calls went (a replica's URL for a replicated model), and which models sent them.
    url: str = ""
    models: tuple[str, ...] = ()
    #: Calls the server saw this phase, times it went down, latency of answered calls.
    calls: int = 0
    ejections: int = 0
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    queue_aware: bool = False


@attrs.define
class SchedulerStats:
    ok: int = 0
    failed: int = 0
    skipped: int = 0
    calls: Counter[str] = attrs.field(factory=Counter)  # per model, whole run so far
    spend_usd: float = 0.0  # whole run so far (including spend_before_usd)
    phase: str = ""
    total: int = 0
    #: Calls made in this phase.
    phase_calls: int = 0
    #: Retries by cause (rate_limit, transient, malformed, unparseable, ...).
    retries: Counter[str] = attrs.field(factory=Counter)
    #: Failed items by final error kind; skipped items by reason (quota, budget, ...).
    failures: Counter[str] = attrs.field(factory=Counter)
    skips: Counter[str] = attrs.field(factory=Counter)
    max_attempts_seen: int = 0
    cancelled: bool = False
    wall_s: float = 0.0
    lanes: dict[str, LaneStats] = attrs.field(factory=dict)
    #: Items of a streamed phase never taken from the iterable because the phase stopped
    #: (cancelled, or a record could not be written): not built, no ``on_done``. Counted
    #: when the iterable has a length.
    unstarted: int = 0


class _Job:
    """Mutable state of one item while it runs (kept small: one per item)."""

    __slots__ = ("attempts", "correction", "cost", "done", "errors", "finish_reason", "iface", "in_tokens", "item",
                 "last_error", "last_kind", "latency_ms", "out_tokens", "parse_failures", "raw", "transport_failures")

    def __init__(self, item: WorkItem, iface: Interface | None) -> None:
        self.item = item
        self.iface = iface
        self.attempts = 0
        self.parse_failures = 0
        self.transport_failures = 0
        self.in_tokens = 0
        self.out_tokens = 0
        self.cost: float | None = None
        self.last_kind: str | None = None
        self.last_error: str | None = None
        self.correction: str | None = None  # why the last reply was rejected, told to the model
        self.done = False
        self.raw: str | None = None  # the transcript fields: see WorkOutcome
        self.finish_reason: str | None = None
        self.latency_ms: float | None = None
        self.errors: list[str] | None = None


def _carry_over(job: _Job, prior: PriorAttempts) -> None:
    """Start ``job`` where calls made before the scheduler left it (a rejected batch reply):
    its next call is a retry, with the correction note and resampling, and its record counts
    those calls, their tokens and cost."""
    job.attempts = prior.attempts
    job.parse_failures = prior.parse_failures
    job.correction = prior.correction
    job.last_kind, job.last_error = prior.error_kind, prior.correction
    job.in_tokens, job.out_tokens = prior.usage.input_tokens, prior.usage.output_tokens
    job.cost = prior.cost_usd
    job.raw, job.latency_ms, job.finish_reason = prior.raw, prior.latency_ms, prior.finish_reason
    job.errors = list(prior.attempt_errors) or None


def _note_error(job: _Job) -> None:
    """Keep each failed attempt's ``kind: message`` for the record (failures only: no cost
    on the common path)."""
    if job.errors is None:
        job.errors = []
    job.errors.append(f"{job.last_kind}: {job.last_error}")


class _PhaseRun:
    """Book-keeping of one ``Scheduler.run`` call."""

    def __init__(self, phase_id: str, stats: SchedulerStats, tracker: PhaseTracker | None) -> None:
        self.phase_id = phase_id
        self.stats = stats
        self.tracker = tracker
        #: Items routed and not yet done (their jobs).
        self.live: set[_Job] = set()
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
        if (self.remaining == 0 and self.source is None) or (self.stopping and not self.batch_running and all(ln.in_flight == 0 for ln in self.lanes.values())):
            self.finished.set()


class Scheduler:
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
        self._limiters: dict[str, AdaptiveLimit] = {}
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

    def limiter(self, connection_key: str) -> AdaptiveLimit | None:
        """The adaptive limit learned for a connection (for status displays and tests)."""
        return self._limiters.get(connection_key)

    def quota_left(self, model_name: str) -> int | None:
        cap = self.limits.quota.get(model_name)
        return None if cap is None else max(0, cap - self.calls[model_name])

    async def run(self, phase_id: str, items: Iterable[WorkItem]) -> SchedulerStats:
        """Run ``items``; returns when each has had ``on_done`` called exactly once.

        Phases normally run one after another. Runs awaited concurrently share quota, spend
        and the learned concurrency limits, but each starts its own workers.
        """
        loop_time = self.clock.now()
        stats = SchedulerStats(phase=phase_id)
        tracker = self.progress.start_phase(phase_id, 0) if self.progress is not None else None
        run = _PhaseRun(phase_id, stats, tracker)
        self._runs.add(run)
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
            if run.source is not None:  # stopped before every item was taken
                run.source = None
                if expected is not None:
                    stats.unstarted = max(0, expected - run.routed)
                    if tracker is not None and stats.unstarted:
                        tracker.items_skipped(stats.unstarted, run.stop_reason)
            if expected is None:
                stats.total = run.routed
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

    # ------------------------------------------------------------------ set-up

    def _route(self, run: _PhaseRun, items: Iterable[WorkItem]) -> list[_Job]:
        """Put each item in its lane's queue, or aside for the batch executor."""
        executor = self.batch_executor
        batch: list[_Job] = []
        unroutable: list[_Job] = []
        self._prepare_lanes()
        for item in items:
            job = self._job(run, item)
            if executor is not None and executor.wants(item):
                batch.append(job)
                continue
            if job.iface is None:
                unroutable.append(job)
                continue
            self._lane_of(run, item.model.name, job.iface).queue.ready.append(job)
        for job in unroutable:
            self._unroutable(run, job)
        return batch

    def _job(self, run: _PhaseRun, item: WorkItem) -> _Job:
        """A routed item's job, counted as live until it is done."""
        job = _Job(item, self.interfaces.get(item.model.name))
        if item.prior is not None:
            _carry_over(job, item.prior)
        run.live.add(job)
        run.routed += 1
        run.remaining += 1
        return job

    def _lane_of(self, run: _PhaseRun, name: str, iface: Interface) -> Lane:
        """The lane whose queue model ``name``'s items join (opened on first use)."""
        key = self._lane_keys.get(name)
        if key is None:
            key = self._lane_keys[name] = iface.connection_key()
        lane = run.entries.get(key)
        if lane is None:
            lane = run.entries[key] = self._open_lanes(run, key, iface)
        if name not in lane.models:
            self._add_model(lane, name, iface)
        return lane

    def _unroutable(self, run: _PhaseRun, job: _Job) -> None:
        job.last_kind, job.last_error = "fatal", f"no interface is loaded for model {job.item.model.name!r}"
        self._finish(run, job, "failed")

    def _refill(self, run: _PhaseRun) -> None:
        """Take items from a streamed phase's iterable into their lanes' queues until the
        items routed and not yet done reach :data:`_BUFFER_PER_SLOT` times the lanes'
        current limits (at least :data:`_MIN_BUFFER`), and start workers for them. An item
        that cannot be built stops the phase; ``run`` re-raises its error."""
        if run.source is None or run.refilling or run.stopping:
            return
        run.refilling = True
        touched: set[Lane] = set()
        try:
            cap = max(_MIN_BUFFER, _BUFFER_PER_SLOT * sum(lane.limit.current for lane in run.lanes.values()))
            source = run.source
            while run.remaining < cap:
                try:
                    item = next(source)
                except StopIteration:
                    run.source = None
                    break
                job = self._job(run, item)
                if job.iface is None:
                    self._unroutable(run, job)
                    continue
                lane = self._lane_of(run, item.model.name, job.iface)
                lane.queue.ready.append(job)
                touched.add(lane)
        except Exception as exc:
            run.source = None
            if run.on_done_error is None:
                run.on_done_error = exc
                log.error("could not build the next item of %s: %s; stopping the phase", run.phase_id, redact(str(exc)))
            run.refilling = False
            self._stop(run, "cancelled")
            return
        run.refilling = False
        for lane in touched:
            self._spawn_workers(run, lane)
        run.settle()

    def _prepare_lanes(self) -> None:
        """Key every model's lane once, so each lane's bound is the smallest
        ``max_concurrency`` among the models that share it, whichever is routed first."""
        for name, iface in self.interfaces.items():
            if name not in self._lane_keys:
                key = self._lane_keys[name] = iface.connection_key()
                self._limiter_for(key, iface)

    def _open_lanes(self, run: _PhaseRun, key: str, iface: Interface) -> Lane:
        """The lane of connection ``key`` for this phase: one lane, or one per replica
        sharing one queue (``parameters.base_url`` as a list). Returns the first."""
        replicas = iface.replica_views()
        if not replicas:
            lane = run.lanes[key] = Lane(key, self._limiter_for(key, iface), iface)
            return lane
        queue = LaneQueue()
        for url, view in replicas:
            sub = f"{key} [{url}]"
            run.lanes[sub] = Lane(sub, self._limiter_for(sub, view), view, queue=queue, url=url)
        return queue.lanes[0]

    def _add_model(self, lane: Lane, name: str, iface: Interface) -> None:
        """Note that model ``name`` calls through ``lane`` (and, replicated, bind it to each replica)."""
        views = dict(iface.replica_views()) if lane.queue.replicated else {}
        for member in lane.queue.lanes:
            member.models.append(name)
            if member.url in views:
                member.pinned[name] = views[member.url]
                member.limit.cap(iface.max_concurrency)

    def _limiter_for(self, key: str, iface: Interface) -> AdaptiveLimit:
        limiter = self._limiters.get(key)
        if limiter is None:
            limiter = self._limiters[key] = AdaptiveLimit(
                iface.default_concurrency, iface.max_concurrency, queue_aware=bool(getattr(iface, "queue_aware", False))
            )
        limiter.cap(iface.max_concurrency)
        return limiter

    def _spawn_workers(self, run: _PhaseRun, lane: Lane) -> None:
        """Start workers until the lane runs at its limit or every queued job has one; for
        replicas, each new worker goes to the admitted replica with the fewest outstanding."""
        if run.stopping:
            return
        queue = lane.queue
        if not queue.replicated:
            while lane.workers < lane.limit.current and lane.workers - lane.in_flight < len(queue.ready):
                self._start_worker(run, lane)
            return
        now = self.clock.now()
        while (target := lane_for_new_worker(queue, now)) is not None:
            self._start_worker(run, target)

    def _start_worker(self, run: _PhaseRun, lane: Lane) -> None:
        lane.workers += 1
        task = asyncio.ensure_future(self._worker(run, lane))
        run.tasks.add(task)
        task.add_done_callback(run.tasks.discard)

    # ------------------------------------------------------------------ the work

    async def _worker(self, run: _PhaseRun, lane: Lane) -> None:
        clock = self.clock
        queue = lane.queue
        ready = queue.ready
        handled = 0
        turn = time.perf_counter()
        try:
            while not run.stopping:
                if lane.workers > lane.limit.current:
                    return  # the limit shrank: this worker's slot is gone
                if lane.down and lane.workers > 1 and lane.siblings_up():
                    return  # a replica that is down keeps one worker, to probe it
                if lane.paused_until:
                    wait = lane.paused_until - clock.now()
                    if wait > 0:
                        await clock.sleep(wait)
                        continue
                    lane.paused_until = 0.0
                if not ready and run.source is not None:
                    self._refill(run)
                if not ready:
                    if queue.delayed == 0:
                        return
                    queue.wake.clear()
                    await queue.wake.wait()
                    continue
                await self._attempt(run, lane, ready.popleft())
                handled += 1
                if handled >= _YIELD_EVERY or time.perf_counter() - turn > _TURN_S:
                    await asyncio.sleep(0)
                    handled, turn = 0, time.perf_counter()
        finally:
            lane.workers -= 1

    async def _attempt(self, run: _PhaseRun, lane: Lane, job: _Job) -> None:
        """One call for ``job`` (or its skip): finish it, or queue its retry."""
        item = job.item
        name = item.model.name
        limits = self.limits
        cap = limits.quota.get(name)
        if cap is not None and self.calls[name] >= cap:
            self._skip(run, job, "quota")
            return
        if limits.budget_usd is not None and self._over_budget():
            self._skip(run, job, "budget")
            return
        iface = lane.pinned.get(name) or job.iface if lane.pinned else job.iface
        assert iface is not None
        self.calls[name] += 1  # reserved before the call: exact under any concurrency
        run.stats.phase_calls += 1
        job.attempts += 1
        lane.in_flight += 1
        load = lane.in_flight
        if load > lane.peak:
            lane.peak = load
        seq = lane.limit.started()
        request = item.request
        if job.correction is not None:  # a retry after a rejected reply: tell why, and sample differently
            request = resampled(with_correction(request, job.correction, item.key), item.key, job.parse_failures,
                                takes_seed=iface.takes_seed)
        started = self.clock.now()
        started_wall = time.perf_counter()
        call_timeout = getattr(iface, "call_timeout_s", None) or limits.call_timeout_s
        try:
            if call_timeout is None:
                result = await iface.generate(request)
            else:
                async with asyncio.timeout(call_timeout):
                    result = await iface.generate(request)
        except asyncio.CancelledError:
            lane.in_flight -= 1
            raise
        except Exception as exc:
            lane.in_flight -= 1
            if isinstance(exc, CallGivenBack) and run.stopping:  # given back unanswered: no call counts
                self.calls[name] -= 1
                run.stats.phase_calls -= 1
                job.attempts -= 1
                self._skip(run, job, run.stop_reason)
                run.settle()
                return
            if is_connection_failure(exc) and self._server_down(run, lane, job):
                return
            job.latency_ms = round((time.perf_counter() - started_wall) * 1000.0, 1)
            lane.calls += 1
            err = self._classify(iface, exc)
            if is_timeout(exc):
                self._timed_out(lane, seq)
            self._failed_call(run, lane, job, err, seq)
            run.settle()
            return
        lane.in_flight -= 1
        finished = self.clock.now()
        lane.limit.succeeded(finished - started, finished, load)
        job.latency_ms = round((time.perf_counter() - started_wall) * 1000.0, 1)
        self._answered(run, lane, job.latency_ms)
        job.raw, job.finish_reason = result.text, result.finish_reason
        usage = result.usage
        job.in_tokens += usage.input_tokens
        job.out_tokens += usage.output_tokens
        if result.cost_usd is not None:
            job.cost = (job.cost or 0.0) + result.cost_usd
        if result.cost_usd:
            self._add_spend(run, result.cost_usd)
        if lane.workers < lane.limit.current and lane.queue.ready:
            self._spawn_workers(run, lane)
        parse = item.parse
        if parse is None:
            self._finish(run, job, "ok", value=result.text, result=result)
            return
        try:
            value = parse(result)
        except OutputParseError as exc:
            job.parse_failures += 1
            job.last_kind, job.last_error = getattr(exc, "error_kind", "unparseable"), redact(str(exc))
            job.correction = job.last_error
            _note_error(job)
            if job.parse_failures > limits.generation_retries or job.attempts >= limits.max_attempts:
                self._finish(run, job, "failed")
            elif run.stopping:
                self._skip(run, job, run.stop_reason)
            else:
                self._count_retry(run, "unparseable")
                lane.queue.ready.append(job)
            return
        except Exception as exc:
            log.exception("parser of %s raised", item.key)
            job.last_kind, job.last_error = "parse_error", redact(f"{type(exc).__name__}: {exc}")
            self._finish(run, job, "failed")
            return
        self._finish(run, job, "ok", value=value, result=result)

    def _answered(self, run: _PhaseRun, lane: Lane, latency_ms: float) -> None:
        """The lane's server answered a call: note its latency; if it had been down, say it
        is back (a replica then takes its share again)."""
        lane.calls += 1
        lane.timeouts_in_a_row = 0
        lane.note_latency(latency_ms)
        if lane.server_wait.answered():
            lane.paused_until = 0.0
            self._say(f"{lane.url}: the server answers again")
            if lane.queue.replicated:
                self._spawn_workers(run, lane)

    def _timed_out(self, lane: Lane, seq: int) -> None:
        """A call ran out of time on a server that was there. A queueing server is over
        capacity: shrink its limit. A replica that does so repeatedly is ejected (its calls
        go to the others while it is probed), like one that refuses connections."""
        if lane.limit.gradient is not None:
            lane.limit.rate_limited(seq)
        if not lane.queue.replicated:
            return
        lane.timeouts_in_a_row += 1
        if (lane.timeouts_in_a_row >= TIMEOUTS_TO_EJECT or lane.down) and lane.siblings_up():  # or a failed probe
            lane.timeouts_in_a_row = 0
            now = self.clock.now()
            if not lane.down:
                lane.ejections += 1
                self._say(f"{lane.url}: {TIMEOUTS_TO_EJECT} calls in a row timed out; its calls go to the other "
                          "replicas while it is probed")
            pause = lane.server_wait.refused(now) or lane.server_wait.max_delay_s
            lane.paused_until = max(lane.paused_until, now + pause)

    def _server_down(self, run: _PhaseRun, lane: Lane, job: _Job) -> bool:
        """The server refused or dropped the call: give the attempt back and pause the lane;
        a replica is ejected and its calls go to the other replicas while it is probed. Once
        the lane (every replica of it) has waited ``connect_wait_s`` the item fails, naming
        the server."""
        now = self.clock.now()
        first = not lane.down
        pause = lane.server_wait.refused(now)
        self.calls[job.item.model.name] -= 1  # the server never saw this call
        run.stats.phase_calls -= 1
        job.attempts -= 1
        members = lane.queue.lanes
        if pause is None and any(not m.server_wait.exhausted(now) for m in members if m is not lane):
            pause = lane.server_wait.max_delay_s  # another replica is up or still waited for: keep probing
        if pause is None:
            urls = ", ".join(m.url for m in members)
            job.last_kind = "transient"
            job.last_error = f"cannot connect to {urls} for {lane.server_wait.wait_s:.0f} s (connect_wait_s)"
            self._finish(run, job, "failed")
            return True
        if first:
            lane.ejections += 1
            if lane.siblings_up():
                self._say(f"{lane.url}: cannot connect; its calls go to the other replicas while it is probed")
            else:
                self._say(f"{lane.url}: cannot connect; waiting up to {lane.server_wait.wait_s:.0f} s for the server "
                          "(connect_wait_s)")
        lane.paused_until = max(lane.paused_until, now + pause)
        if run.stopping:
            self._skip(run, job, run.stop_reason)
        else:
            lane.queue.ready.appendleft(job)
            if lane.queue.replicated:
                self._spawn_workers(run, lane)
        run.settle()
        return True

    def _say(self, line: str) -> None:
        """One console line for the user (and the log: a warning only when not printed, so the
        console does not show it twice)."""
        printed = self.progress is not None and self.progress.summary
        (log.info if printed else log.warning)("%s", redact(line))
        if printed:
            assert self.progress is not None
            self.progress.say(redact(line))

    def _classify(self, iface: Interface, exc: Exception) -> ModelError:
        if isinstance(exc, TimeoutError) and not isinstance(exc, ModelError):
            return TransientModelError(f"call timed out after {self.limits.call_timeout_s} s")
        try:
            return iface.classify_error(exc)
        except Exception as inner:
            return FatalModelError(f"{type(exc).__name__}: {exc} (and classify_error raised {inner!r})")

    def _failed_call(self, run: _PhaseRun, lane: Lane, job: _Job, err: ModelError, seq: int) -> None:
        job.last_kind = err.kind
        job.last_error = redact(str(err))
        _note_error(job)
        job.transport_failures += 1
        if isinstance(err, RateLimitError):
            if lane.limit.rate_limited(seq):
                log.debug("lane %s: rate limited, concurrency now %d", lane.key, lane.limit.current)
            if err.retry_after and 0 < err.retry_after <= self.limits.retry.max_retry_after_s:
                until = self.clock.now() + err.retry_after
                if until > lane.paused_until:
                    lane.paused_until = until
                    lane.pauses += 1
        if job.attempts >= self.limits.max_attempts:
            self._finish(run, job, "failed")
            return
        delay = self.limits.retry.delay_for(err, job.transport_failures, self.rng)
        if delay is None:
            if err.retryable and err.retry_after:
                job.last_error = redact(
                    f"{job.last_error} (the provider asked to wait {err.retry_after:.0f} s, more than "
                    f"the {self.limits.retry.max_retry_after_s:.0f} s a run waits)"
                )
            self._finish(run, job, "failed")
            return
        if run.stopping:
            self._skip(run, job, run.stop_reason)
            return
        self._count_retry(run, err.kind)
        lane.queue.delayed += 1
        task = asyncio.ensure_future(self._requeue_after(run, lane, job, delay))
        run.tasks.add(task)
        task.add_done_callback(run.tasks.discard)

    async def _requeue_after(self, run: _PhaseRun, lane: Lane, job: _Job, delay: float) -> None:
        try:
            await self.clock.sleep(delay)
        finally:
            lane.queue.delayed -= 1
        if run.stopping:
            self._skip(run, job, run.stop_reason)
            return
        lane.queue.ready.append(job)
        lane.queue.wake.set()
        self._spawn_workers(run, lane)

    # ------------------------------------------------------------------ bookkeeping

    def _count_retry(self, run: _PhaseRun, kind: str) -> None:
        run.stats.retries[kind] += 1
        if run.tracker is not None:
            run.tracker.retried()

    def _over_budget(self) -> bool:
        # a hair of tolerance: ten calls of $0.01 reach a $0.10 budget despite float rounding
        budget = self.limits.budget_usd
        return budget is not None and self.spend_usd >= budget - 1e-9

    def _add_spend(self, run: _PhaseRun, usd: float) -> None:
        self.spend_usd += usd
        if run.tracker is not None:
            run.tracker.add_spend(usd)

    def _skip(self, run: _PhaseRun, job: _Job, reason: str) -> None:
        job.last_kind = reason
        job.last_error = job.last_error if job.attempts else None
        self._finish(run, job, "skipped")

    def _finish(self, run: _PhaseRun, job: _Job, status: str, *, value: Any = None, result: Any = None) -> None:
        """Report ``job`` done: build its outcome and call ``on_done`` (exactly once)."""
        if job.done:
            return
        job.done = True
        ok = status == "ok"
        outcome = WorkOutcome(
            job.item,
            status,  # type: ignore[arg-type]
            value=value,
            result=result,
            error_kind=None if ok else job.last_kind,
            error=None if ok else job.last_error,
            attempts=job.attempts,
            usage=Usage(job.in_tokens, job.out_tokens),
            cost_usd=job.cost,
            raw=job.raw,
            latency_ms=job.latency_ms,
            finish_reason=job.finish_reason,
            attempt_errors=tuple(job.errors or ()),
        )
        self._deliver(run, job, outcome)

    def _deliver(self, run: _PhaseRun, job: _Job, outcome: WorkOutcome) -> None:
        stats = run.stats
        status = outcome.status
        if status == "ok":
            stats.ok += 1
        elif status == "failed":
            stats.failed += 1
            stats.failures[outcome.error_kind or "error"] += 1
        else:
            stats.skipped += 1
            stats.skips[outcome.error_kind or "skipped"] += 1
        if outcome.attempts > stats.max_attempts_seen:
            stats.max_attempts_seen = outcome.attempts
        run.remaining -= 1
        run.live.discard(job)
        try:
            job.item.on_done(outcome)
        except Exception as exc:
            # an item counts as done once its record is written: this one is not
            status, outcome = "skipped", attrs.evolve(outcome, error_kind=UNWRITTEN)
            if run.on_done_error is None:
                run.on_done_error = exc
                log.error("could not record %s: %s; stopping the phase", job.item.key, redact(str(exc)))
                self._stop(run, UNWRITTEN)
        if run.tracker is not None:
            run.tracker.item_done(status, outcome.error_kind)
        if run.source is not None:
            self._refill(run)
        run.settle()

    def _stop(self, run: _PhaseRun, reason: str) -> None:
        """Stop starting calls; report queued items skipped now, wake idle workers."""
        if run.stopping:
            return
        run.stopping = True
        run.stop_reason = reason
        for lane in run.lanes.values():
            while lane.queue.ready:
                self._skip(run, lane.queue.ready.popleft(), reason)
            lane.queue.wake.set()
        run.settle()

    def _sweep(self, run: _PhaseRun) -> None:
        """Report every item still not done as skipped (cancelled, or left by the batch executor)."""
        for job in list(run.live):
            if not job.done:
                self._skip(run, job, run.stop_reason)

    async def _cancel_tasks(self, run: _PhaseRun) -> None:
        tasks = [t for t in run.tasks if not t.done()]
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    # ------------------------------------------------------------------ batch APIs

    def _start_batch(self, run: _PhaseRun, jobs: list[_Job]) -> None:
        executor = self.batch_executor
        assert executor is not None
        handed: list[_Job] = []
        for job in jobs:
            name = job.item.model.name
            cap = self.limits.quota.get(name)
            if cap is not None and self.calls[name] >= cap:
                self._skip(run, job, "quota")
                continue
            if self.limits.budget_usd is not None and self._over_budget():
                self._skip(run, job, "budget")
                continue
            self.calls[name] += 1
            run.stats.phase_calls += 1
            job.attempts = 1
            handed.append(job)
        if not handed:
            return
        by_item = {id(job.item): job for job in handed}

        def on_outcome(outcome: WorkOutcome) -> None:
            job = by_item.get(id(outcome.item))
            if job is None or job.done:
                log.warning("batch executor reported %s twice or for an unknown item; ignored",
                            getattr(outcome.item, "key", "?"))
                return
            job.done = True
            if outcome.cost_usd:
                self._add_spend(run, outcome.cost_usd)
            self._deliver(run, job, outcome)

        async def drive() -> None:
            try:
                await executor.run(run.phase_id, [j.item for j in handed], on_outcome)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.error("batch executor failed in %s: %s", run.phase_id, redact(str(exc)))
                for job in handed:
                    if not job.done:
                        job.last_kind, job.last_error = "batch", redact(f"{type(exc).__name__}: {exc}")
                        self._finish(run, job, "failed")
            else:
                for job in handed:
                    if not job.done:
                        self._skip(run, job, "batch_pending")
            finally:
                run.batch_running = False
                run.settle()

        run.batch_running = True
        task = asyncio.ensure_future(drive())
        run.tasks.add(task)
        task.add_done_callback(run.tasks.discard)

