"""Provider batch APIs: the runner contract (:mod:`.base`), the executor the scheduler hands
batch-enabled items to (:mod:`.executor`), the ``pending_batches.json`` store (:mod:`.pending`),
and collection of pending jobs for ``coeval status --fetch-batches`` (:mod:`.fetch`)."""

from coeval.scheduler.batching.base import BatchJobStatus, BatchRunner, BatchState
from coeval.scheduler.batching.executor import PollPolicy, ProviderBatchExecutor, make_batch_executor
from coeval.scheduler.batching.fetch import FetchReport, fetch_pending_batches
from coeval.scheduler.batching.pending import PENDING_FILE, PendingJob, PendingStore

__all__ = [
    "PENDING_FILE",
    "BatchJobStatus",
    "BatchRunner",
    "BatchState",
    "FetchReport",
    "PendingJob",
    "PendingStore",
    "PollPolicy",
    "ProviderBatchExecutor",
    "fetch_pending_batches",
    "make_batch_executor",
]
