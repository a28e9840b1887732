"""The provider-neutral batch job life cycle: pending -> running -> completed | expired | failed.

Jobs advance when they are polled (tests: a fixed number of polls, deterministic) or with
wall-clock time (benchmarks). How a job ends is fixed when it is created, from the settings
in force then: ``batch_outcome``, ``batch_failed_lines``, ``batch_done_before_expiry`` and
``batch_junk_lines``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from coeval_testing.fake_server._junk import BATCH_JUNK
from coeval_testing.fake_server._state import BatchJob, FakeState

__all__ = ["TERMINAL", "advance", "cancel", "counts", "jsonl", "new_job"]

TERMINAL = frozenset({"completed", "expired", "failed", "cancelled"})


def new_job(state: FakeState, prefix: str, provider: str, model: str | None, requests: list[tuple[str, dict[str, Any]]], **extra: Any) -> BatchJob:
    cfg = state.config
    job = BatchJob(
        id=state.new_id(prefix),
        provider=provider,
        model=model,
        requests=requests,
        created_at=time.time(),
        extra={
            "outcome": cfg.batch_outcome,
            "failed_lines": cfg.batch_failed_lines,
            "done_before_expiry": cfg.batch_done_before_expiry,
            "junk_lines": cfg.batch_junk_lines,
            "polls_needed": cfg.batch_polls_to_complete,
            "seconds_needed": cfg.batch_seconds_to_complete,
            **extra,
        },
    )
    state.jobs[job.id] = job
    return job


def advance(job: BatchJob, respond: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Move ``job`` one poll forward; on its last step, compute every line's result."""
    if job.state in TERMINAL:
        return
    job.polls += 1
    seconds = job.extra["seconds_needed"]
    done = (time.time() - job.created_at >= seconds) if seconds is not None else job.polls >= job.extra["polls_needed"]
    if not done:
        job.state = "running"
        return
    outcome = job.extra["outcome"]
    if outcome == "failed":
        job.state = "failed"
        return
    n = len(job.requests)
    for i, (custom_id, body) in enumerate(job.requests):
        if outcome == "expired" and i >= job.extra["done_before_expiry"]:
            job.results[custom_id] = ("expired", None)
        elif outcome == "completed" and i >= n - job.extra["failed_lines"]:
            job.results[custom_id] = ("error", {"status": 500, "code": "server_error", "message": "The request failed inside the batch"})
        else:
            token = BATCH_JUNK.set(i < job.extra.get("junk_lines", 0))
            try:
                job.results[custom_id] = ("ok", respond(body))
            finally:
                BATCH_JUNK.reset(token)
    job.state = "expired" if outcome == "expired" else "completed"


def cancel(job: BatchJob) -> None:
    """Cancel ``job``; a job that has already ended keeps its outcome, as on the real APIs."""
    if job.state not in TERMINAL:
        job.state = "cancelled"


def counts(job: BatchJob) -> dict[str, int]:
    ok = sum(1 for kind, _ in job.results.values() if kind == "ok")
    failed = sum(1 for kind, _ in job.results.values() if kind == "error")
    expired = sum(1 for kind, _ in job.results.values() if kind == "expired")
    return {"total": len(job.requests), "ok": ok, "failed": failed, "expired": expired}


def jsonl(lines: list[dict[str, Any]]) -> bytes:
    """A results file: one JSON object a line, as every provider's batch output is written."""
    return "".join(json.dumps(line) + "\n" for line in lines).encode()
