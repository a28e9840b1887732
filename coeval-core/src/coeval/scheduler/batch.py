"""The protocol by which the scheduler hands items to provider batch APIs, and the hand-off
(:class:`BatchHandoff`).

A batch executor (``coeval.scheduler.batching``) carries items of batch-enabled models through a
provider's batch API instead of real-time calls. The scheduler talks to it through two
methods only::

    class MyBatchExecutor:
        def wants(self, item: WorkItem) -> bool: ...
        async def run(self, phase_id: str, items: Sequence[WorkItem],
                      on_outcome: Callable[[WorkOutcome], None]) -> None: ...

How the scheduler uses it, within one ``Scheduler.run(phase_id, items)``:

1. Every item is offered to ``wants(item)`` (a cheap, synchronous check; typically "is this
   item's model batch-enabled"). Items it wants are not called in real time.
2. The scheduler reserves one call of the model's quota per wanted item before handing it
   over (items past the quota are reported ``skipped``/``quota`` and never reach the
   executor). The budget is checked once, before handing over.
3. ``await run(phase_id, wanted_items, on_outcome)`` runs as one task beside the real-time
   workers. For each item the executor calls ``on_outcome(WorkOutcome(...))`` exactly once,
   synchronously from the event-loop thread, as soon as that item's result is known; the
   scheduler forwards it to ``item.on_done`` (which writes the record), counts it in the
   stats and progress bar, and adds ``outcome.cost_usd`` to the run's spend. A second
   outcome for the same item is ignored (and logged).
4. The executor owns its retries (batch APIs report per-request errors; re-submitting is
   its choice) and must persist job ids before polling, so a crash never re-pays a batch.
5. When ``run`` returns, items it reported nothing for are reported ``skipped`` with
   ``error_kind="batch_pending"`` (e.g. a job still running at the provider, to be collected
   by ``--continue``). If ``run`` raises, they are reported ``failed`` with kind ``batch``
   and the error text; the exception does not stop the real-time part of the phase.
6. On cancellation (Ctrl-C) the task running ``run`` is cancelled; outcomes already
   reported stay, the rest become ``skipped``/``cancelled``.
7. Optionally, an executor with an ``attach(scheduler)`` method is given the scheduler when
   that is built, so calls it makes in real time (retries of rejected batch replies) count
   toward the scheduler's quotas and budget.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from coeval.config.credentials import redact
from coeval.scheduler.admission import Admission, CallJournal
from coeval.scheduler.allowance import Allowance
from coeval.scheduler.job import Job
from coeval.scheduler.outcomes import Outcomes
from coeval.scheduler.phase_run import PhaseRun
from coeval.scheduler.work import WorkItem, WorkOutcome

__all__ = ["BatchExecutor", "BatchHandoff"]

log = logging.getLogger("coeval.scheduler")


@runtime_checkable
class BatchExecutor(Protocol):
    def wants(self, item: WorkItem) -> bool:
        """Whether this item goes through a batch API instead of a real-time call."""
        ...

    async def run(
        self, phase_id: str, items: Sequence[WorkItem], on_outcome: Callable[[WorkOutcome], None]
    ) -> None:
        """Carry ``items`` through batch jobs, calling ``on_outcome`` once per item."""
        ...


class BatchHandoff:
    """Hands a phase's batch items to the :class:`BatchExecutor` (steps 2-6 above): reserves
    their quota, checks the budget, writes each call's start in the call ledger, and reports
    the executor's outcomes as the items' own."""

    def __init__(self, executor: BatchExecutor, allowance: Allowance, admission: Admission,
                 journal: CallJournal | None, outcomes: Outcomes) -> None:
        self.executor = executor
        self.allowance = allowance
        self.admission = admission
        self.journal = journal
        self.outcomes = outcomes

    def start(self, run: PhaseRun, jobs: list[Job]) -> None:
        """Hand ``jobs`` over: one task runs the executor beside the real-time workers."""
        allowance, outcomes = self.allowance, self.outcomes
        handed: list[Job] = []
        journal = self.journal
        calls: dict[int, str] = {}
        for job in jobs:
            name = job.item.model.name
            if allowance.quota_reached(name):
                outcomes.skip(run, job, "quota")
                continue
            if allowance.over_budget():
                outcomes.skip(run, job, "budget")
                continue
            if journal is not None:
                try:
                    calls[id(job.item)] = journal.started(name, run.phase_id, job.item.key,
                                                          self.admission.estimate(name, run.phase_id))
                except OSError as exc:
                    outcomes.unrecorded(run, job, exc)
                    break
            allowance.reserve(name)
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
            call = calls.pop(id(outcome.item), None)
            if journal is not None and call is not None:
                journal.ended(call, outcome.item.model.name, outcome.cost_usd)
            if outcome.cost_usd:
                outcomes.add_spend(run, outcome.cost_usd)
            outcomes.deliver(run, job, outcome)

        run.batch_running = True
        run.start(self._drive(run, handed, on_outcome))

    async def _drive(self, run: PhaseRun, handed: list[Job], on_outcome: Callable[[WorkOutcome], None]) -> None:
        """Run the executor; items it reported nothing for are skipped (``batch_pending``),
        or failed (``batch``) when it raised."""
        try:
            await self.executor.run(run.phase_id, [j.item for j in handed], on_outcome)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.error("batch executor failed in %s: %s", run.phase_id, redact(str(exc)))
            for job in handed:
                if not job.done:
                    job.last_kind, job.last_error = "batch", redact(f"{type(exc).__name__}: {exc}")
                    self.outcomes.finish(run, job, "failed")
        else:
            for job in handed:
                if not job.done:
                    self.outcomes.skip(run, job, "batch_pending")
        finally:
            run.batch_running = False
            run.settle()
