"""The workers: one call at a time, its retries, and what a lane learns from it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from coeval.config.credentials import redact
from coeval.interfaces.base import (
    CallGivenBack,
    FatalModelError,
    Interface,
    ModelError,
    OverloadedError,
    RateLimitError,
    TransientModelError,
)
from coeval.interfaces.sending import on_send
from coeval.prompts.errors import OutputParseError
from coeval.scheduler.call_start import CallStart
from coeval.scheduler.correction import with_correction
from coeval.scheduler.lanes import TIMEOUTS_TO_EJECT, Lane
from coeval.scheduler.resample import resampled
from coeval.scheduler.routing import Routing
from coeval.scheduler.server_wait import is_connection_failure, is_timeout
from coeval.scheduler.state import _TURN_S, _YIELD_EVERY, _Job, _note_error, _PhaseRun

log = logging.getLogger("coeval.scheduler")


class Calls(Routing):
    """The workers: one call at a time, its retries, and what a lane learns from it."""

    # ------------------------------------------------------------------ the work

    async def _worker(self, run: _PhaseRun, lane: Lane) -> None:
        clock = self.clock
        queue = lane.queue
        ready = queue.ready
        slots = lane.slots
        handled = 0
        turn = clock.now()  # the scheduler's clock: virtual under a ManualClock, so tests are deterministic
        try:
            while not run.stopping:
                if slots.held > lane.limit.current:
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
                if slots.waiting and slots.others_waiting(lane):  # another phase's lane waits for a slot
                    if ready:
                        slots.wait(run, lane)  # this lane's items want it back in turn
                    return
                handled += 1
                if handled >= _YIELD_EVERY or clock.now() - turn > _TURN_S:
                    await asyncio.sleep(0)
                    handled, turn = 0, clock.now()
        finally:
            lane.workers -= 1
            slots.held -= 1
            if slots.waiting:
                self._give_slot(slots)

    async def _attempt(self, run: _PhaseRun, lane: Lane, job: _Job) -> None:
        """One call for ``job`` (or its skip): finish it, or queue its retry."""
        item = job.item
        name = item.model.name
        limits = self.limits
        cap = limits.quota.get(name)
        admission = self.admission
        phase = run.phase_id
        why = "quota" if cap is not None and self.calls[name] >= cap else None
        if why is None and admission.budget_usd is not None:  # calls in flight count at their estimate
            why = await admission.admit(name, phase, calls=self.calls, cap=cap, spend=lambda: self.spend_usd,
                                        stopped=lambda: run.stop_reason if run.stopping else None)
        if why is not None:
            self._skip(run, job, why)
            return
        estimate = admission.estimate(name, phase)
        iface = lane.pinned.get(name) or job.iface if lane.pinned else job.iface
        assert iface is not None
        journal = self.journal
        start = CallStart(journal, name, phase, item.key, estimate) if journal is not None else None
        announced = start is not None and iface.announces_send
        if start is not None and not announced:  # the interface cannot say when it sends: now
            try:
                start.write()
            except OSError as exc:  # its start could not be written: not sent
                self._unrecorded(run, job, exc)
                return
        self.calls[name] += 1  # reserved before the call: exact under any concurrency
        admission.started(name, phase, estimate)
        run.stats.phase_calls += 1
        job.attempts += 1
        lane.in_flight += 1
        slots = lane.slots
        slots.in_flight += 1
        load = slots.in_flight
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
            with on_send(start.write) if announced and start is not None else contextlib.nullcontext():
                if call_timeout is None:
                    result = await iface.generate(request)
                else:
                    async with asyncio.timeout(call_timeout):
                        result = await iface.generate(request)
        except asyncio.CancelledError:  # stopped at once: the call may have been made, its end stays open
            lane.in_flight -= 1
            slots.in_flight -= 1
            admission.settled(name, phase, estimate, None, answered=False)
            raise
        except Exception as exc:
            lane.in_flight -= 1
            slots.in_flight -= 1
            admission.settled(name, phase, estimate, None, answered=False)
            if start is not None and start.error is not None:  # its start line failed: never sent
                self._unsent(run, job, name)
                self._unrecorded(run, job, start.error)
                run.settle()
                return
            given_back = isinstance(exc, CallGivenBack) and run.stopping
            refused = not given_back and is_connection_failure(exc)
            if start is not None:  # the server never saw it: no call counts
                start.not_sent() if given_back or refused or not start.sent else start.ended(None)
            if given_back:
                self._unsent(run, job, name)
                self._skip(run, job, run.stop_reason)
                run.settle()
                return
            if refused and self._server_down(run, lane, job):
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
        slots.in_flight -= 1
        admission.settled(name, phase, estimate, result.cost_usd)
        if start is not None:  # its real cost, before the record is handed on
            if not start.sent:  # answered without announcing its send: count it now
                try:
                    start.write()
                except OSError as exc:
                    self._unrecorded(run, job, exc)
                    run.settle()
                    return
            start.ended(result.cost_usd)
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
        if slots.held < lane.limit.current and lane.queue.ready:
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

    def _unsent(self, run: _PhaseRun, job: _Job, name: str) -> None:
        """A call reserved but never sent: its place in the quota and its attempt are given back."""
        self.calls[name] -= 1
        run.stats.phase_calls -= 1
        job.attempts -= 1

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
        if isinstance(err, RateLimitError | OverloadedError):  # the server takes fewer at once
            if lane.limit.rate_limited(seq):
                log.debug("lane %s: %s, concurrency now %d", lane.key, err.kind, lane.limit.current)
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

