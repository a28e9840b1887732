"""Reporting items done: outcomes, skips, spend, stopping a phase."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import attrs

from coeval.config.credentials import redact
from coeval.interfaces.base import Usage
from coeval.scheduler.state import UNWRITTEN, SchedulerBase, _Job, _PhaseRun
from coeval.scheduler.work import WorkOutcome

log = logging.getLogger("coeval.scheduler")


class Outcomes(SchedulerBase):
    """Reporting items done: outcomes, skips, spend, stopping a phase."""

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

    def _unrecorded(self, run: _PhaseRun, job: _Job, exc: OSError) -> None:
        """The call ledger could not take a call's start line (a full disk): the call is not
        sent, and the phase stops with that error, as when a record cannot be written."""
        if run.on_done_error is None:
            run.on_done_error = exc
            log.error("could not write the start of a call for %s: %s; stopping the phase", job.item.key,
                      redact(str(exc)))
        self._stop(run, UNWRITTEN)
        self._skip(run, job, UNWRITTEN)

    def _stop(self, run: _PhaseRun, reason: str) -> None:
        """Stop starting calls; report queued items skipped now, wake idle workers."""
        if run.stopping:
            return
        run.stopping = True
        run.stop_reason = reason
        self.admission.wake()
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

