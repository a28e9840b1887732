"""The one retry policy every provider shares, and the retries it drives (:class:`Retries`).

Interfaces never retry (their SDK clients are built with retries off); they raise one of
the :mod:`coeval.interfaces.base` error kinds and the scheduler decides here:

* ``fatal`` (auth, unknown model, bad request): never retried.
* ``rate_limit``: wait what the provider asked for (``retry_after``) when it said, else
  exponential backoff; the connection's concurrency shrinks too.
* ``transient`` (5xx, timeouts, dropped connections) and ``malformed`` (a 200 with a body
  that is not a reply): exponential backoff with jitter.
* unparseable output (:class:`~coeval.prompts.errors.OutputParseError`): retried at once, at most
  ``generation_retries`` times; a model's bad answer is not a load problem.

All causes together stay under ``max_attempts`` calls per item, so retries can never
multiply the way nested retry loops do.
"""

from __future__ import annotations

import logging
import random

import attrs

from coeval.config.credentials import redact
from coeval.interfaces.base import ModelError, OverloadedError, RateLimitError
from coeval.scheduler.clock import Clock
from coeval.scheduler.job import Job
from coeval.scheduler.lanes import Lane
from coeval.scheduler.outcomes import Outcomes
from coeval.scheduler.phase_run import PhaseRun
from coeval.scheduler.workers import Workers

__all__ = ["Retries", "RetryPolicy"]

log = logging.getLogger("coeval.scheduler")


@attrs.frozen
class RetryPolicy:
    """Backoff shape. Delay before retry ``n`` (n = 1 after the first failed call) is
    ``min(max_delay_s, base_delay_s * 2 ** (n - 1))`` with the upper half jittered
    ("equal jitter"): never less than half the nominal delay, so a crowd of failing calls
    spreads out without any of them hammering the provider."""

    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    #: A provider asking for a longer wait than this fails the item instead (a daily quota
    #: reset is not worth holding a run for); ``--continue`` picks it up later.
    max_retry_after_s: float = 300.0

    def backoff(self, failures: int, rng: random.Random) -> float:
        nominal = min(self.max_delay_s, self.base_delay_s * (2.0 ** max(0, failures - 1)))
        return nominal / 2.0 + rng.random() * nominal / 2.0

    def delay_for(self, error: ModelError, failures: int, rng: random.Random) -> float | None:
        """Seconds to wait before the next attempt, or None when the error is not worth one."""
        if not error.retryable:
            return None
        if error.retry_after is not None and error.retry_after > 0:
            if error.retry_after > self.max_retry_after_s:
                return None
            return float(error.retry_after)
        return self.backoff(failures, rng)


class Retries:
    """Applies a :class:`RetryPolicy` to a phase's failed calls: the item fails, or leaves its
    lane's queue for its backoff and rejoins it when the wait is over (its worker moves on to
    the next item). A ``Retry-After`` also pauses the whole lane: the provider said the key
    is over its limit."""

    def __init__(self, policy: RetryPolicy, max_attempts: int, clock: Clock, rng: random.Random, outcomes: Outcomes,
                 workers: Workers) -> None:
        self.policy = policy
        self.max_attempts = max_attempts
        self.clock = clock
        self.rng = rng
        self.outcomes = outcomes
        self.workers = workers

    def count(self, run: PhaseRun, kind: str) -> None:
        """One retry of ``kind`` (rate_limit, transient, unparseable, ...) in the phase's figures."""
        run.stats.retries[kind] += 1
        if run.tracker is not None:
            run.tracker.retried()

    def failed(self, run: PhaseRun, lane: Lane, job: Job, err: ModelError, seq: int) -> None:
        """``job``'s call failed with ``err`` (call ``seq`` of the lane's limit): retry it
        after its backoff, or fail it."""
        job.last_kind = err.kind
        job.last_error = redact(str(err))
        job.note_error()
        job.transport_failures += 1
        if isinstance(err, RateLimitError | OverloadedError):  # the server takes fewer at once
            if lane.limit.rate_limited(seq):
                log.debug("lane %s: %s, concurrency now %d", lane.key, err.kind, lane.limit.current)
            if err.retry_after and 0 < err.retry_after <= self.policy.max_retry_after_s:
                until = self.clock.now() + err.retry_after
                if until > lane.paused_until:
                    lane.paused_until = until
                    lane.pauses += 1
        if job.attempts >= self.max_attempts:
            self.outcomes.finish(run, job, "failed")
            return
        delay = self.policy.delay_for(err, job.transport_failures, self.rng)
        if delay is None:
            if err.retryable and err.retry_after:
                job.last_error = redact(
                    f"{job.last_error} (the provider asked to wait {err.retry_after:.0f} s, more than "
                    f"the {self.policy.max_retry_after_s:.0f} s a run waits)"
                )
            self.outcomes.finish(run, job, "failed")
            return
        if run.stopping:
            self.outcomes.skip(run, job, run.stop_reason)
            return
        self.count(run, err.kind)
        lane.queue.delayed += 1
        run.start(self._requeue_after(run, lane, job, delay))

    async def _requeue_after(self, run: PhaseRun, lane: Lane, job: Job, delay: float) -> None:
        try:
            await self.clock.sleep(delay)
        finally:
            lane.queue.delayed -= 1
        if run.stopping:
            self.outcomes.skip(run, job, run.stop_reason)
            return
        lane.queue.ready.append(job)
        lane.queue.wake.set()
        self.workers.spawn(run, lane)
