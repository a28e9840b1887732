"""Reporting items done: each item's outcome handed to its ``on_done`` exactly once, counted
in the phase's figures and progress; skips; the call ledger's start lines; stopping a phase."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import attrs

from coeval.config.credentials import redact
from coeval.interfaces.base import Usage
from coeval.scheduler.admission import Admission, CallJournal
from coeval.scheduler.allowance import Allowance
from coeval.scheduler.job import Job
from coeval.scheduler.phase_run import UNWRITTEN, PhaseRun
from coeval.scheduler.work import WorkOutcome

__all__ = ["Outcomes"]

log = logging.getLogger("coeval.scheduler")


class Outcomes:
    """Reports items done and stops phases. ``refill`` is called once an item of a streamed
    phase is done, so the next items are taken (:meth:`coeval.scheduler.intake.Intake.refill`)."""

    def __init__(self, allowance: Allowance, admission: Admission, journal: CallJournal | None, *,
                 refill: Callable[[PhaseRun], None]) -> None:
        self.allowance = allowance
        self.admission = admission
        self.journal = journal
        self.refill = refill

    def add_spend(self, run: PhaseRun, usd: float) -> None:
        self.allowance.add_spend(usd)
        if run.tracker is not None:
            run.tracker.add_spend(usd)

    def skip(self, run: PhaseRun, job: Job, reason: str) -> None:
        job.last_kind = reason
        job.last_error = job.last_error if job.attempts else None
        self.finish(run, job, "skipped")

    def finish(self, run: PhaseRun, job: Job, status: str, *, value: Any = None, result: Any = None) -> None:
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
        self.deliver(run, job, outcome)

    def deliver(self, run: PhaseRun, job: Job, outcome: WorkOutcome) -> None:
        """Hand ``outcome`` to the item's ``on_done`` and count it. An ``on_done`` that
        raises (its record could not be written) stops the phase with that error."""
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
                self.stop(run, UNWRITTEN)
        if run.tracker is not None:
            run.tracker.item_done(status, outcome.error_kind)
        if run.source is not None:
            self.refill(run)
        run.settle()

    def unrecorded(self, run: PhaseRun, job: Job, exc: OSError) -> None:
        """The call ledger could not take a call's start line (a full disk): the call is not
        sent, and the phase stops with that error, as when a record cannot be written."""
        if run.on_done_error is None:
            run.on_done_error = exc
            log.error("could not write the start of a call for %s: %s; stopping the phase", job.item.key,
                      redact(str(exc)))
        self.stop(run, UNWRITTEN)
        self.skip(run, job, UNWRITTEN)

    def stop(self, run: PhaseRun, reason: str) -> None:
        """Stop starting calls; report queued items skipped now, wake idle workers."""
        if run.stopping:
            return
        run.stopping = True
        run.stop_reason = reason
        self.admission.wake()
        for lane in run.lanes.values():
            while lane.queue.ready:
                self.skip(run, lane.queue.ready.popleft(), reason)
            lane.queue.wake.set()
        run.settle()

    def sweep(self, run: PhaseRun) -> None:
        """Report every item still not done as skipped (cancelled, or left by the batch executor)."""
        for job in list(run.live):
            if not job.done:
                self.skip(run, job, run.stop_reason)
