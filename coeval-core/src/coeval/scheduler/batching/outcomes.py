"""A finished batch job's results, one outcome per item: the same outcomes a real-time call gives.

Kept apart from the executor, which submits, polls and hands these on: each item is parsed
with ``item.parse`` as in real time, so batch records are the same records; a request the
provider failed, expired or left out becomes a ``failed`` outcome that ``--continue`` retries.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence

import attrs

from coeval.config.credentials import redact
from coeval.interfaces.base import GenerateResult, ModelError, TransientModelError
from coeval.prompts.errors import OutputParseError
from coeval.scheduler.batching.base import BatchJobStatus, BatchRunner
from coeval.scheduler.batching.pending import PendingJob
from coeval.scheduler.work import WorkItem, WorkOutcome

__all__ = ["fail_all", "item_outcome", "missing_reason", "parsed_outcome", "read_results"]

#: job states after which the provider has results (or errors) to collect
COLLECTABLE = ("completed", "expired", "cancelled", "failed")


async def read_results(
    runner: BatchRunner, job: PendingJob, status: BatchJobStatus
) -> tuple[Mapping[str, GenerateResult | ModelError] | None, BatchJobStatus, str]:
    """The job's results, read with up to three tries, its status and the last error; None
    when they could not be read for a reason that may pass (the job then stays pending). A
    lasting error gives no results and its message joins the status', so every item fails
    naming it."""
    if status.state not in COLLECTABLE:
        return {}, status, ""
    error = ""
    for attempt in range(3):
        try:
            return await runner.collect(job.job_id), status, ""
        except ModelError as exc:
            error = redact(str(exc))
            if not exc.retryable:
                return {}, attrs.evolve(status, message=f"{status.message} {error}".strip()), error
            if attempt < 2:
                await asyncio.sleep(2.0 * (attempt + 1))
    return None, status, error


def missing_reason(job: PendingJob, status: BatchJobStatus) -> str:
    """Why an item has no result in the job: what the job's end state says."""
    return {
        "failed": f"batch job {job.job_id} failed" + (f": {status.message}" if status.message else ""),
        "expired": f"batch job {job.job_id} expired before this request ran",
        "cancelled": f"batch job {job.job_id} was cancelled before this request ran",
    }.get(status.state, f"batch job {job.job_id} returned no result for this request")


def item_outcome(item: WorkItem, result: GenerateResult | ModelError | None, missing: str) -> WorkOutcome:
    """The outcome of one item of a collected job."""
    if result is None:
        error: ModelError = TransientModelError(missing)
        return WorkOutcome(item, "failed", error_kind=error.kind, error=missing, attempts=1)
    if isinstance(result, ModelError):
        return WorkOutcome(item, "failed", error_kind=result.kind, error=redact(str(result)), attempts=1)
    return parsed_outcome(item, result)


def parsed_outcome(item: WorkItem, result: GenerateResult) -> WorkOutcome:
    """A reply parsed as a real-time one would be."""
    try:
        value = item.parse(result) if item.parse is not None else result.text
    except OutputParseError as exc:
        kind, reason = getattr(exc, "error_kind", "unparseable"), redact(str(exc))
        return WorkOutcome(item, "failed", result=result, error_kind=kind, error=reason, attempts=1,
                           usage=result.usage, cost_usd=result.cost_usd, raw=result.text,
                           finish_reason=result.finish_reason, attempt_errors=(f"{kind}: {reason}",))
    except Exception as exc:
        return WorkOutcome(item, "failed", result=result, error_kind="parse_error",
                           error=redact(f"{type(exc).__name__}: {exc}"), attempts=1, usage=result.usage,
                           cost_usd=result.cost_usd)
    return WorkOutcome(item, "ok", value=value, result=result, attempts=1, usage=result.usage, cost_usd=result.cost_usd)


def fail_all(items: Sequence[WorkItem], kind: str, message: str, on_outcome: Callable[[WorkOutcome], None]) -> None:
    for item in items:
        on_outcome(WorkOutcome(item, "failed", error_kind=kind, error=message, attempts=0))
