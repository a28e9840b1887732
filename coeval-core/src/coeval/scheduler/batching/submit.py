"""Making batch jobs: a model's requests cut to the provider's limits, each cut submitted with
retries. The executor records each job before its first poll, so a crash never re-submits."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from coeval.interfaces.base import GenerateRequest, ModelError
from coeval.scheduler.batching.base import BatchRunner

__all__ = ["chunks", "submit_job"]


def chunks(runner: BatchRunner, pairs: list[tuple[str, Any]]) -> list[list[tuple[str, Any]]]:
    """``pairs`` cut into jobs: by the runner's own rule (bytes, say) when it has one, else
    by its request count."""
    split = getattr(runner, "chunk_requests", None)
    if callable(split):
        return [list(c) for c in split(pairs)]
    size = max(1, int(runner.max_requests_per_job))
    return [pairs[i : i + size] for i in range(0, len(pairs), size)]


async def submit_job(runner: BatchRunner, requests: Sequence[tuple[str, GenerateRequest]]) -> str:
    """The provider's job id; a retryable error is tried three times, then raised."""
    for attempt in range(3):
        try:
            return await runner.submit(requests)
        except ModelError as exc:
            if not exc.retryable or attempt == 2:
                raise
            await asyncio.sleep(exc.retry_after or 2.0 * (attempt + 1))
    raise AssertionError("unreachable")  # the loop returns or raises
