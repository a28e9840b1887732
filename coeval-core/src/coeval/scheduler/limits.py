"""The run-wide limits a scheduler holds its calls to: attempts per item, quota per model,
budget, retry shape and call timeout."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from coeval.scheduler.retry import RetryPolicy

__all__ = ["DEFAULT_MAX_ATTEMPTS", "SERVER_ERROR_ROOM", "SchedulerLimits", "max_attempts_for"]

#: Calls per item at most, all causes together, unless generation_retries asks for more.
DEFAULT_MAX_ATTEMPTS = 6
#: Calls a server's errors (5xx, timeouts, rate limits) may take besides the retries for bad
#: output the config asks for: what the default bound leaves them at the default 2 retries.
SERVER_ERROR_ROOM = 3


def max_attempts_for(generation_retries: int) -> int:
    """The bound on calls per item for a run with ``generation_retries``: every retry the
    config asks for, and room for a few server errors besides, so that a replica restarting
    in the middle of a call does not fail an item that needed all its retries."""
    return max(DEFAULT_MAX_ATTEMPTS, generation_retries + 1 + SERVER_ERROR_ROOM)


@attrs.define
class SchedulerLimits:
    """Run-wide limits.

    ``quota`` is the most calls each model may make (None or missing = unlimited), and
    ``calls_before`` what earlier processes of the same run already used (``--continue``),
    so the cap holds across restarts. Likewise ``budget_usd`` against ``spend_before_usd``.
    """

    generation_retries: int = 2  # extra attempts for unparseable output
    max_attempts: int = DEFAULT_MAX_ATTEMPTS  # hard bound on calls per item, all causes together
    quota: Mapping[str, int | None] = attrs.field(factory=dict)
    budget_usd: float | None = None
    calls_before: Mapping[str, int] = attrs.field(factory=dict)
    spend_before_usd: float = 0.0
    retry: RetryPolicy = attrs.field(factory=RetryPolicy)
    #: Seconds a single call may take before it counts as a transient failure (None: no
    #: limit beyond the interface's own timeout).
    call_timeout_s: float | None = 600.0
    #: What one call of (model, phase) is expected to cost before any has returned (the
    #: plan's prices): calls in flight count at it against the budget.
    call_estimates_usd: Mapping[tuple[str, str], float] = attrs.field(factory=dict)
