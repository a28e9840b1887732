"""Real-time calls for items that went to the batch executor.

Two kinds of item leave a batch job for real time, both through a scheduler of their own
(the same retry policy, correction note and resampling as every real-time call):

* a model's items too few for its provider's smallest job (:func:`realtime_scheduler`);
* items whose batch reply was rejected by their parser (unparseable, or a quality check):
  a batch job cannot retry one request, and the same prompt submitted again at temperature 0
  fails the same way. Their remaining attempts run in real time
  (:func:`retry_rejected`), carrying on from the batch call (:mod:`coeval.scheduler.prior`):
  the batch call is attempt 1, the first real-time call attempt 2, with the correction turn
  and a new seed (or a warmer temperature). These calls are billed at the real-time price.

With the run's scheduler known (:meth:`ProviderBatchExecutor.attach`), retries draw on its quota
counter and see its spend, so a quota or budget holds across batch and real-time calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from coeval.interfaces.base import Interface
from coeval.scheduler.core import Scheduler
from coeval.scheduler.limits import SchedulerLimits, max_attempts_for
from coeval.scheduler.prior import PriorAttempts
from coeval.scheduler.work import WorkItem, WorkOutcome

__all__ = ["prior_of", "realtime_scheduler", "retry_rejected", "retryable", "run_in_real_time"]


def realtime_scheduler(name: str, iface: Interface, generation_retries: int, parent: Scheduler | None, *,
                       share_quota: bool, spend_pending_usd: float = 0.0) -> Scheduler:
    """A scheduler for model ``name`` alone. With ``parent`` (the run's scheduler): its retry
    policy and call bounds; its budget against its spend plus ``spend_pending_usd`` (paid
    replies not yet reported to it); and with ``share_quota``, its quota and its very call
    counter, so each real-time call counts toward the model's quota as it is made."""
    if parent is None:
        limits = SchedulerLimits(generation_retries=generation_retries,
                                 max_attempts=max_attempts_for(generation_retries))
        return Scheduler({name: iface}, limits)
    own = parent.limits
    limits = SchedulerLimits(
        generation_retries=generation_retries,
        max_attempts=max(own.max_attempts, max_attempts_for(generation_retries)),
        quota=own.quota if share_quota else {},
        budget_usd=own.budget_usd,
        spend_before_usd=parent.spend_usd + spend_pending_usd,
        retry=own.retry,
        call_timeout_s=own.call_timeout_s,
    )
    scheduler = Scheduler({name: iface}, limits, journal=parent.journal)  # its calls go in the run's ledger
    if share_quota:
        scheduler.calls = parent.calls
    return scheduler


def retryable(outcome: WorkOutcome, generation_retries: int) -> bool:
    """A reply its parser rejected (not a parser that crashed), with retries left."""
    return (outcome.status == "failed" and outcome.result is not None and outcome.error is not None
            and outcome.error_kind not in (None, "parse_error") and generation_retries >= 1)


def prior_of(outcome: WorkOutcome) -> PriorAttempts:
    """What the rejected batch call leaves to the real-time retries."""
    assert outcome.error is not None and outcome.error_kind is not None
    return PriorAttempts(
        attempts=max(1, outcome.attempts), parse_failures=1, correction=outcome.error, error_kind=outcome.error_kind,
        usage=outcome.usage, cost_usd=outcome.cost_usd, raw=outcome.raw, latency_ms=outcome.latency_ms,
        finish_reason=outcome.finish_reason,
        attempt_errors=outcome.attempt_errors or (f"{outcome.error_kind}: {outcome.error}",),
    )


def _final(rejected: WorkOutcome, retried: WorkOutcome) -> WorkOutcome:
    """The outcome to report for a retried item, naming the item the executor was given. A
    retry the scheduler skipped (quota, budget, Ctrl-C) leaves the item failed as its last
    reply left it, with every call made counted."""
    if retried.status != "skipped":
        return attrs.evolve(retried, item=rejected.item)
    return attrs.evolve(retried, item=rejected.item, status="failed", error_kind=rejected.error_kind,
                        error=retried.error or rejected.error)


async def retry_rejected(phase_id: str, rejected: Sequence[WorkOutcome], scheduler: Scheduler) -> list[WorkOutcome]:
    """Run the remaining attempts of ``rejected`` (one model's items) on ``scheduler``.

    Returns each item's final outcome, to be reported by the caller all at once: the run's
    scheduler ends a phase as soon as every item is reported, so the batch job must leave
    ``pending_batches.json`` in the same step as its last outcome, with no wait between."""
    by_key = {o.item.key: o for o in rejected}
    finals: list[WorkOutcome] = []

    def keep(retried: WorkOutcome) -> None:
        finals.append(_final(by_key[retried.item.key], retried))

    items: list[WorkItem] = [attrs.evolve(o.item, on_done=keep, prior=prior_of(o)) for o in rejected]
    await scheduler.run(phase_id, items)
    return finals


async def run_in_real_time(phase_id: str, items: list[WorkItem], iface: Interface | None, generation_retries: int,
                           parent: Scheduler | None, on_outcome: Callable[[WorkOutcome], None]) -> None:
    """A model's items too few for a batch job, through a scheduler of their own; each
    outcome is reported for the item the batch executor was handed."""
    model = items[0].model
    if iface is None:
        for item in items:
            on_outcome(WorkOutcome(item, "failed", error_kind="batch", attempts=0, error=(
                f"{len(items)} items are too few for a {model.interface} batch job and no real-time interface was "
                "given; set batch_enabled: false for this model")))
        return
    originals = {item.key: item for item in items}

    def forward(outcome: WorkOutcome) -> None:
        on_outcome(attrs.evolve(outcome, item=originals[outcome.item.key]))

    wrapped = [attrs.evolve(item, on_done=forward) for item in items]
    # the run's scheduler reserved these items' first calls already: no quota counted twice
    scheduler = realtime_scheduler(model.name, iface, generation_retries, parent, share_quota=False)
    await scheduler.run(phase_id, wrapped)
