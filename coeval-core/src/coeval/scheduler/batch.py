"""The protocol by which the scheduler hands items to provider batch APIs.

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

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from coeval.scheduler.work import WorkItem, WorkOutcome

__all__ = ["BatchExecutor"]


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
