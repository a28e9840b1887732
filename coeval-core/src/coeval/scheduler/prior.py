"""Calls an item had before the scheduler got it, so its retries carry on from there.

A provider batch job answers an item once; when that reply fails its parse, the item's
remaining attempts run in real time. :class:`PriorAttempts` on the item tells the scheduler
what the batch call already did -- one attempt made, one reply rejected and why, the tokens
and cost it used -- so the retry carries the correction note and a resampled request exactly
as a real-time retry would, and the record counts every call.
"""

from __future__ import annotations

import attrs

from coeval.interfaces.base import Usage

__all__ = ["PriorAttempts"]


@attrs.frozen
class PriorAttempts:
    """What calls made outside the scheduler left behind (see the module docstring)."""

    #: calls already made for the item
    attempts: int
    #: of which replies were rejected by the parser (each retry after one is resampled)
    parse_failures: int
    #: why the last reply was rejected: told to the model on the next call
    correction: str
    #: the last failure's kind (``unparseable``, ``quality``, ...), kept if no retry runs
    error_kind: str
    usage: Usage = attrs.field(factory=Usage)
    cost_usd: float | None = None
    #: the last reply as received, and its call's wall time and finish reason
    raw: str | None = None
    latency_ms: float | None = None
    finish_reason: str | None = None
    #: ``"kind: message"`` of each failed attempt so far, in order
    attempt_errors: tuple[str, ...] = ()
