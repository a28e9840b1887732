"""One item's job while the scheduler runs it: its attempts so far, the last error, and
what its record will say (tokens, cost, the last reply)."""

from __future__ import annotations

from coeval.interfaces.base import Interface
from coeval.scheduler.prior import PriorAttempts
from coeval.scheduler.work import WorkItem

__all__ = ["Job"]


class Job:
    """Mutable state of one item while it runs (kept small: one per item)."""

    __slots__ = ("attempts", "correction", "cost", "done", "errors", "finish_reason", "iface", "in_tokens", "item",
                 "last_error", "last_kind", "latency_ms", "out_tokens", "parse_failures", "raw", "transport_failures")

    def __init__(self, item: WorkItem, iface: Interface | None) -> None:
        self.item = item
        self.iface = iface
        self.attempts = 0
        self.parse_failures = 0
        self.transport_failures = 0
        self.in_tokens = 0
        self.out_tokens = 0
        self.cost: float | None = None
        self.last_kind: str | None = None
        self.last_error: str | None = None
        self.correction: str | None = None  # why the last reply was rejected, told to the model
        self.done = False
        self.raw: str | None = None  # the transcript fields: see WorkOutcome
        self.finish_reason: str | None = None
        self.latency_ms: float | None = None
        self.errors: list[str] | None = None

    def carry_over(self, prior: PriorAttempts) -> None:
        """Start where calls made before the scheduler left the item (a rejected batch
        reply): its next call is a retry, with the correction note and resampling, and its
        record counts those calls, their tokens and cost."""
        self.attempts = prior.attempts
        self.parse_failures = prior.parse_failures
        self.correction = prior.correction
        self.last_kind, self.last_error = prior.error_kind, prior.correction
        self.in_tokens, self.out_tokens = prior.usage.input_tokens, prior.usage.output_tokens
        self.cost = prior.cost_usd
        self.raw, self.latency_ms, self.finish_reason = prior.raw, prior.latency_ms, prior.finish_reason
        self.errors = list(prior.attempt_errors) or None

    def note_error(self) -> None:
        """Keep the failed attempt's ``kind: message`` for the record (failures only: no
        cost on the common path)."""
        if self.errors is None:
            self.errors = []
        self.errors.append(f"{self.last_kind}: {self.last_error}")
