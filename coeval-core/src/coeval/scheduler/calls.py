"""One call at a time: admitting it (quota, budget), writing its start in the call ledger,
making it, and what follows -- the reply parsed and the item finished, or its retry."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from coeval.config.credentials import redact
from coeval.interfaces.base import (
    CallGivenBack,
    FatalModelError,
    GenerateResult,
    Interface,
    ModelError,
    TransientModelError,
)
from coeval.interfaces.sending import on_send
from coeval.prompts.errors import OutputParseError
from coeval.scheduler.admission import Admission, CallJournal
from coeval.scheduler.allowance import Allowance
from coeval.scheduler.call_start import CallStart
from coeval.scheduler.clock import Clock
from coeval.scheduler.correction import with_correction
from coeval.scheduler.job import Job
from coeval.scheduler.lane_health import LaneHealth
from coeval.scheduler.lanes import Lane
from coeval.scheduler.limits import SchedulerLimits
from coeval.scheduler.outcomes import Outcomes
from coeval.scheduler.phase_run import PhaseRun
from coeval.scheduler.resample import resampled
from coeval.scheduler.retry import Retries
from coeval.scheduler.server_wait import is_connection_failure, is_timeout
from coeval.scheduler.workers import Workers

__all__ = ["Caller"]

log = logging.getLogger("coeval.scheduler")


class Caller:
    """Makes one call for a job (:meth:`attempt`), and hands what came of it on: the reply
    to the item's parser and outcome, a failure to :class:`~coeval.scheduler.retry.Retries`,
    what the server did to :class:`~coeval.scheduler.lane_health.LaneHealth`."""

    def __init__(self, limits: SchedulerLimits, allowance: Allowance, admission: Admission,
                 journal: CallJournal | None, clock: Clock, *, outcomes: Outcomes, retries: Retries,
                 health: LaneHealth, workers: Workers) -> None:
        self.limits = limits
        self.allowance = allowance
        self.admission = admission
        self.journal = journal
        self.clock = clock
        self.outcomes = outcomes
        self.retries = retries
        self.health = health
        self.workers = workers

    async def attempt(self, run: PhaseRun, lane: Lane, job: Job) -> None:
        """One call for ``job`` (or its skip): finish it, or queue its retry."""
        item = job.item
        name = item.model.name
        limits = self.limits
        allowance = self.allowance
        outcomes = self.outcomes
        cap = limits.quota.get(name)
        admission = self.admission
        phase = run.phase_id
        why = "quota" if cap is not None and allowance.calls[name] >= cap else None
        if why is None and admission.budget_usd is not None:  # calls in flight count at their estimate
            why = await admission.admit(name, phase, calls=allowance.calls, cap=cap, spend=lambda: allowance.spend_usd,
                                        stopped=lambda: run.stop_reason if run.stopping else None)
        if why is not None:
            outcomes.skip(run, job, why)
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
                outcomes.unrecorded(run, job, exc)
                return
        allowance.calls[name] += 1  # reserved before the call: exact under any concurrency
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
                outcomes.unrecorded(run, job, start.error)
                run.settle()
                return
            given_back = isinstance(exc, CallGivenBack) and run.stopping
            refused = not given_back and is_connection_failure(exc)
            if start is not None:  # the server never saw it: no call counts
                start.not_sent() if given_back or refused or not start.sent else start.ended(None)
            if given_back:
                self._unsent(run, job, name)
                outcomes.skip(run, job, run.stop_reason)
                run.settle()
                return
            if refused and self.health.refused(run, lane, job):
                return
            job.latency_ms = round((time.perf_counter() - started_wall) * 1000.0, 1)
            lane.calls += 1
            err = self._classify(iface, exc)
            if is_timeout(exc):
                self.health.timed_out(lane, seq)
            self.retries.failed(run, lane, job, err, seq)
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
                    outcomes.unrecorded(run, job, exc)
                    run.settle()
                    return
            start.ended(result.cost_usd)
        finished = self.clock.now()
        lane.limit.succeeded(finished - started, finished, load)
        job.latency_ms = round((time.perf_counter() - started_wall) * 1000.0, 1)
        self.health.answered(run, lane, job.latency_ms)
        job.raw, job.finish_reason = result.text, result.finish_reason
        usage = result.usage
        job.in_tokens += usage.input_tokens
        job.out_tokens += usage.output_tokens
        if result.cost_usd is not None:
            job.cost = (job.cost or 0.0) + result.cost_usd
        if result.cost_usd:
            outcomes.add_spend(run, result.cost_usd)
        if slots.held < lane.limit.current and lane.queue.ready:
            self.workers.spawn(run, lane)
        self._took(run, lane, job, result)

    def _unsent(self, run: PhaseRun, job: Job, name: str) -> None:
        """A call reserved but never sent: its place in the quota and its attempt are given back."""
        self.allowance.give_back(name)
        run.stats.phase_calls -= 1
        job.attempts -= 1

    def _took(self, run: PhaseRun, lane: Lane, job: Job, result: GenerateResult) -> None:
        """The reply of ``job``'s call, parsed: the item finishes, or (an unparseable reply)
        is queued again for a retry that says what was wrong."""
        item = job.item
        limits = self.limits
        outcomes = self.outcomes
        parse = item.parse
        if parse is None:
            outcomes.finish(run, job, "ok", value=result.text, result=result)
            return
        try:
            value = parse(result)
        except OutputParseError as exc:
            job.parse_failures += 1
            job.last_kind, job.last_error = getattr(exc, "error_kind", "unparseable"), redact(str(exc))
            job.correction = job.last_error
            job.note_error()
            if job.parse_failures > limits.generation_retries or job.attempts >= limits.max_attempts:
                outcomes.finish(run, job, "failed")
            elif run.stopping:
                outcomes.skip(run, job, run.stop_reason)
            else:
                self.retries.count(run, "unparseable")
                lane.queue.ready.append(job)
            return
        except Exception as exc:
            log.exception("parser of %s raised", item.key)
            job.last_kind, job.last_error = "parse_error", redact(f"{type(exc).__name__}: {exc}")
            outcomes.finish(run, job, "failed")
            return
        outcomes.finish(run, job, "ok", value=value, result=result)

    def _classify(self, iface: Interface, exc: Exception) -> ModelError:
        if isinstance(exc, TimeoutError) and not isinstance(exc, ModelError):
            return TransientModelError(f"call timed out after {self.limits.call_timeout_s} s")
        try:
            return iface.classify_error(exc)
        except Exception as inner:
            return FatalModelError(f"{type(exc).__name__}: {exc} (and classify_error raised {inner!r})")
