"""Provider batch APIs: the runner contract (:mod:`.base`), the executor the scheduler hands
batch-enabled items to (:mod:`.executor`) and the ``pending_batches.json`` store (:mod:`.pending`).
Collecting pending jobs outside a run (``coeval status --fetch-batches``) replays the phases, so
it is :mod:`coeval.run.batch_fetch`'s."""

from coeval.scheduler.batching.base import BatchJobStatus, BatchRunner, BatchState
from coeval.scheduler.batching.executor import PollPolicy, ProviderBatchExecutor, make_batch_executor
from coeval.scheduler.batching.pending import PENDING_FILE, PendingJob, PendingStore

__all__ = [
    "PENDING_FILE",
    "BatchJobStatus",
    "BatchRunner",
    "BatchState",
    "PendingJob",
    "PendingStore",
    "PollPolicy",
    "ProviderBatchExecutor",
    "make_batch_executor",
]
