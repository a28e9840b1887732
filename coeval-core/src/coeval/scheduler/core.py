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
  the queue, so a phase of 10,000 items costs a few dozen tasks, not 10,000.
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
from collections import Counter, deque
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from coeval.credentials import redact
from coeval.interfaces.base import FatalModelError, Interface, ModelError, RateLimitError, Usage
from coeval.scheduler.adaptive import AdaptiveLimit, LimitCounters
from coeval.scheduler.batch import BatchExecutor
from coeval.scheduler.clock import Clock, SystemClock
from coeval.scheduler.retry import RetryPolicy
from coeval.scheduler.correction import with_correction
from coeval.scheduler.resample import resampled
from coeval.scheduler.server_wait import DEFAULT_CONNECT_WAIT_S, ServerWait, is_connection_failure, is_timeout
from coeval.scheduler.work import OutputParseError, WorkItem, WorkOutcome

if TYPE_CHECKING:
    from coeval.progress import PhaseTracker, ProgressReporter

__all__ = ["LaneStats", "ModelError", "Scheduler", "SchedulerLimits", "SchedulerStats"]

log = logging.getLogger("coeval.scheduler")

#: Workers yield to the event loop at least this often, so zero-latency interfaces (the
#: mock) cannot starve the progress display, signal handling or other lanes.
_YIELD_EVERY = 32


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
    """One connection's concurrency, as the adaptive limiter left it."""

    limit: int
    peak_in_flight: int
    pauses: int
    counters: LimitCounters


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


def _note_error(job: _Job) -> None:
    """Keep each failed attempt's ``kind: message`` for the record (failures only: no cost
    on the common path)."""
    if job.errors is None:
        job.errors = []
    job.errors.append(f"{job.last_kind}: {job.last_error}")


class _Lane:
    """One connection's queue, workers and limit, for the duration of one phase."""

    __slots__ = ("delayed", "in_flight", "key", "limit", "paused_until", "pauses", "peak", "ready", "server_wait",
                 "url", "wake", "workers")

    def __init__(self, key: str, limit: AdaptiveLimit, iface: Interface | None = None) -> None:
        self.key = key
        self.limit = limit
        self.server_wait = ServerWait(float(getattr(iface, "connect_wait_s", DEFAULT_CONNECT_WAIT_S)))
        self.url = str(getattr(iface, "server_label", "") or key)
        self.ready: deque[_Job] = deque()
        self.delayed = 0  # jobs waiting for their backoff
        self.workers = 0
        self.in_flight = 0
        self.peak = 0
        self.paused_until = 0.0
        self.pauses = 0
        self.wake = asyncio.Event()


class _PhaseRun:
    """Book-keeping of one ``Scheduler.run`` call."""

    def __init__(self, phase_id: str, stats: SchedulerStats, tracker: PhaseTracker | None) -> None:
        self.phase_id = phase_id
        self.stats = stats
        self.tracker = tracker
        self.jobs: list[_Job] = []
        self.remaining = 0
        self.stopping = False
        self.stop_reason = "cancelled"
        self.finished = asyncio.Event()
        self.tasks: set[asyncio.Task[Any]] = set()
        self.lanes: dict[str, _Lane] = {}
        self.batch_running = False
        self.on_done_error: BaseException | None = None

    def settle(self) -> None:
        """Wake ``run`` when nothing is left to wait for."""
        if self.remaining == 0 or (self.stopping and not self.batch_running and all(ln.in_flight == 0 for ln in self.lanes.values())):
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
        try:
            batch_items = self._route(run, items)
            stats.total = len(run.jobs)
            if tracker is not None:
                tracker.total = stats.total
                tracker.set_spend(self.spend_usd)
            if batch_items:
                self._start_batch(run, batch_items)
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
        lanes = run.lanes
        lane_keys = self._lane_keys
        interfaces = self.interfaces
        unroutable: list[_Job] = []
        self._prepare_lanes()
        for item in items:
            name = item.model.name
            iface = interfaces.get(name)
            job = _Job(item, iface)
            run.jobs.append(job)
            if executor is not None and executor.wants(item):
                batch.append(job)
                continue
            if iface is None:
                unroutable.append(job)
                continue
            key = lane_keys.get(name)
            if key is None:
                key = lane_keys[name] = iface.connection_key()
            lane = lanes.get(key)
            if lane is None:
                lane = lanes[key] = _Lane(key, self._limiter_for(key, iface), iface)
            lane.ready.append(job)
        run.remaining = len(run.jobs)
        for job in unroutable:
            job.last_kind, job.last_error = "fatal", f"no interface is loaded for model {job.item.model.name!r}"
            self._finish(run, job, "failed")
        return batch

    def _prepare_lanes(self) -> None:
        """Key every model's lane once, so each lane's bound is the smallest
        ``max_concurrency`` among the models that share it, whichever is routed first."""
        for name, iface in self.interfaces.items():
            if name not in self._lane_keys:
                key = self._lane_keys[name] = iface.connection_key()
                self._limiter_for(key, iface)

    def _limiter_for(self, key: str, iface: Interface) -> AdaptiveLimit:
        limiter = self._limiters.get(key)
        if limiter is None:
            limiter = self._limiters[key] = AdaptiveLimit(
                iface.default_concurrency, iface.max_concurrency, queue_aware=bool(getattr(iface, "queue_aware", False))
            )
        limiter.cap(iface.max_concurrency)
        return limiter

    def _spawn_workers(self, run: _PhaseRun, lane: _Lane) -> None:
        """Start workers until the lane runs at its limit or every queued job has one."""
        if run.stopping:
            return
        while lane.workers < lane.limit.current and lane.workers - lane.in_flight < len(lane.ready):
            lane.workers += 1
            task = asyncio.ensure_future(self._worker(run, lane))
            run.tasks.add(task)
            task.add_done_callback(run.tasks.discard)

    # ------------------------------------------------------------------ the work

    async def _worker(self, run: _PhaseRun, lane: _Lane) -> None:
        clock = self.clock
        ready = lane.ready
        handled = 0
        try:
            while not run.stopping:
                if lane.workers > lane.limit.current:
                    return  # the limit shrank: this worker's slot is gone
                if lane.paused_until:
                    wait = lane.paused_until - clock.now()
                    if wait > 0:
                        await clock.sleep(wait)
                        continue
                    lane.paused_until = 0.0
                if not ready:
                    if lane.delayed == 0:
                        return
                    lane.wake.clear()
                    await lane.wake.wait()
                    continue
                await self._attempt(run, lane, ready.popleft())
                handled += 1
                if handled % _YIELD_EVERY == 0:
                    await asyncio.sleep(0)
        finally:
            lane.workers -= 1

    async def _attempt(self, run: _PhaseRun, lane: _Lane, job: _Job) -> None:
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
        iface = job.iface
        assert iface is not None
        self.calls[name] += 1  # reserved before the call: exact under any concurrency
        run.stats.phase_calls += 1
        job.attempts += 1
        lane.in_flight += 1
        if lane.in_flight > lane.peak:
            lane.peak = lane.in_flight
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
            if is_connection_failure(exc) and self._server_down(run, lane, job):
                return
            job.latency_ms = round((time.perf_counter() - started_wall) * 1000.0, 1)
            err = self._classify(iface, exc)
            if lane.limit.gradient is not None and is_timeout(exc):
                lane.limit.rate_limited(seq)  # a queueing server is over capacity
            self._failed_call(run, lane, job, err, seq)
            run.settle()
            return
        lane.in_flight -= 1
        finished = self.clock.now()
        lane.limit.succeeded(finished - started, finished)
        if lane.server_wait.answered():
            self._say(f"{lane.url}: the server answers again")
        job.latency_ms = round((time.perf_counter() - started_wall) * 1000.0, 1)
        job.raw, job.finish_reason = result.text, result.finish_reason
        usage = result.usage
        job.in_tokens += usage.input_tokens
        job.out_tokens += usage.output_tokens
        if result.cost_usd is not None:
            job.cost = (job.cost or 0.0) + result.cost_usd
        if result.cost_usd:
            self._add_spend(run, result.cost_usd)
        if lane.workers < lane.limit.current and lane.ready:
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
                lane.ready.append(job)
            return
        except Exception as exc:
            log.exception("parser of %s raised", item.key)
            job.last_kind, job.last_error = "parse_error", redact(f"{type(exc).__name__}: {exc}")
            self._finish(run, job, "failed")
            return
        self._finish(run, job, "ok", value=value, result=result)

    def _server_down(self, run: _PhaseRun, lane: _Lane, job: _Job) -> bool:
        """The server refused or dropped the call: give the attempt back and pause the lane.
        Once the lane has waited ``connect_wait_s`` the item fails, naming the server."""
        now = self.clock.now()
        first = lane.server_wait.down_since is None
        pause = lane.server_wait.refused(now)
        self.calls[job.item.model.name] -= 1  # the server never saw this call
        run.stats.phase_calls -= 1
        job.attempts -= 1
        if pause is None:
            job.last_kind = "transient"
            job.last_error = f"cannot connect to {lane.url} for {lane.server_wait.wait_s:.0f} s (connect_wait_s)"
            self._finish(run, job, "failed")
            return True
        if first:
            self._say(f"{lane.url}: cannot connect; waiting up to {lane.server_wait.wait_s:.0f} s for the server (connect_wait_s)")
        lane.paused_until = max(lane.paused_until, now + pause)
        if run.stopping:
            self._skip(run, job, run.stop_reason)
        else:
            lane.ready.appendleft(job)
        run.settle()
        return True

    def _say(self, line: str) -> None:
        """One console line for the user (and the log: a warning only when not printed, so the
        console does not show it twice)."""
        printed = self.progress is not None and self.progress.summary
        (log.info if printed else log.warning)("%s", redact(line))
        if printed:
            assert self.progress is not None
            self.progress.console.print(redact(line), markup=False, highlight=False, soft_wrap=True)

    def _classify(self, iface: Interface, exc: Exception) -> ModelError:
        if isinstance(exc, TimeoutError) and not isinstance(exc, ModelError):
            from coeval.interfaces.base import TransientModelError

            return TransientModelError(f"call timed out after {self.limits.call_timeout_s} s")
        try:
            return iface.classify_error(exc)
        except Exception as inner:
            return FatalModelError(f"{type(exc).__name__}: {exc} (and classify_error raised {inner!r})")

    def _failed_call(self, run: _PhaseRun, lane: _Lane, job: _Job, err: ModelError, seq: int) -> None:
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
        lane.delayed += 1
        task = asyncio.ensure_future(self._requeue_after(run, lane, job, delay))
        run.tasks.add(task)
        task.add_done_callback(run.tasks.discard)

    async def _requeue_after(self, run: _PhaseRun, lane: _Lane, job: _Job, delay: float) -> None:
        try:
            await self.clock.sleep(delay)
        finally:
            lane.delayed -= 1
        if run.stopping:
            self._skip(run, job, run.stop_reason)
            return
        lane.ready.append(job)
        lane.wake.set()
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
            run.tracker.set_spend(self.spend_usd)

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
        if run.tracker is not None:
            run.tracker.item_done(status, outcome.error_kind)
        run.remaining -= 1
        try:
            job.item.on_done(outcome)
        except Exception as exc:
            if run.on_done_error is None:
                run.on_done_error = exc
                log.error("could not record %s: %s; stopping the phase", job.item.key, redact(str(exc)))
                self._stop(run, "cancelled")
        run.settle()

    def _stop(self, run: _PhaseRun, reason: str) -> None:
        """Stop starting calls; report queued items skipped now, wake idle workers."""
        if run.stopping:
            return
        run.stopping = True
        run.stop_reason = reason
        for lane in run.lanes.values():
            while lane.ready:
                self._skip(run, lane.ready.popleft(), reason)
            lane.wake.set()
        run.settle()

    def _sweep(self, run: _PhaseRun) -> None:
        """Report every item still not done as skipped (cancelled, or left by the batch executor)."""
        for job in run.jobs:
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

