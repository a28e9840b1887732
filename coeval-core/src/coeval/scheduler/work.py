"""Work items: what the phases hand to the scheduler, and what comes back.

A phase turns the run folder's state into :class:`WorkItem` objects (one model call each),
skipping items whose records already exist. The scheduler runs them and calls
``item.on_done(outcome)`` exactly once per item, synchronously, and that callback writes the
record (appended and flushed) before the item counts as done. Items that never ran (quota or
budget reached, run cancelled) are reported with ``outcome.status == "skipped"`` and write no
record, so ``--continue`` picks them up later.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import attrs

from coeval.config.model import ModelConfig
from coeval.interfaces.base import GenerateRequest, GenerateResult, Usage
from coeval.scheduler.prior import PriorAttempts

__all__ = ["WorkItem", "WorkOutcome"]


@attrs.frozen
class WorkOutcome:
    item: WorkItem
    status: Literal["ok", "failed", "skipped"]
    #: What ``parse`` returned for the last successful reply (``result.text`` without a parser).
    value: Any = None
    result: GenerateResult | None = None
    #: failed: rate_limit | transient | malformed | fatal | unparseable | parse_error | batch;
    #: skipped: quota | budget | cancelled | batch_pending
    error_kind: str | None = None
    error: str | None = None  # message, secrets removed
    attempts: int = 0  # calls made for this item (bounded by SchedulerLimits.max_attempts)
    usage: Usage = attrs.field(factory=Usage)  # summed over attempts
    cost_usd: float | None = None
    #: The last reply's text as received (before parsing), also on failed items.
    raw: str | None = None
    latency_ms: float | None = None  # wall time of the call that gave ``raw`` (or the last call)
    finish_reason: str | None = None
    #: ``"kind: message"`` of every failed attempt, in order (transport and parse failures).
    attempt_errors: tuple[str, ...] = ()


@attrs.frozen
class WorkItem:
    """One model call to make. ``key`` is unique within a run (the record id)."""

    key: str
    phase: str
    model: ModelConfig
    request: GenerateRequest
    on_done: Callable[[WorkOutcome], None]
    #: Turns the reply into the value to store; raises :class:`~coeval.prompts.errors.OutputParseError` to ask for a retry.
    parse: Callable[[GenerateResult], Any] | None = None
    #: Free-form context for the record builder (task, teacher, student, ...).
    meta: dict[str, Any] = attrs.field(factory=dict)
    #: Calls made for this item before it reached the scheduler (a batch reply that failed
    #: its parse): the scheduler carries on from them (:mod:`coeval.scheduler.prior`).
    prior: PriorAttempts | None = None
