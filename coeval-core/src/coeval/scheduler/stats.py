"""What a phase's run comes to: its items' counts, its calls and retries, and each lane's
concurrency and latency (``lanes.json``, ``coeval status``)."""

from __future__ import annotations

from collections import Counter

import attrs

from coeval.scheduler.adaptive import LimitCounters
from coeval.scheduler.lanes import Lane, percentile

__all__ = ["LaneStats", "SchedulerStats", "lane_stats"]


@attrs.define
class LaneStats:
    """One lane's concurrency as the adaptive limiter left it, and its calls in the phase."""

    limit: int
    peak_in_flight: int
    pauses: int
    counters: LimitCounters
    #: Where its calls went (a replica's URL for a replicated model), and which models sent them.
    url: str = ""
    models: tuple[str, ...] = ()
    #: Calls the server saw this phase, times it went down, latency of answered calls.
    calls: int = 0
    ejections: int = 0
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    queue_aware: bool = False


def lane_stats(lane: Lane) -> LaneStats:
    """A lane's figures at the end of its phase."""
    return LaneStats(
        limit=lane.limit.current,
        peak_in_flight=lane.peak,
        pauses=lane.pauses,
        counters=attrs.evolve(lane.limit.counters),
        url=lane.url,
        models=tuple(lane.models),
        calls=lane.calls,
        ejections=lane.ejections,
        latency_p50_ms=percentile(lane.latencies_ms, 0.50),
        latency_p95_ms=percentile(lane.latencies_ms, 0.95),
        queue_aware=lane.limit.gradient is not None,
    )


@attrs.define
class SchedulerStats:
    ok: int = 0
    failed: int = 0
    skipped: int = 0
    calls: Counter[str] = attrs.field(factory=Counter)  # per model, whole run so far
    spend_usd: float = 0.0  # whole run so far (including spend_before_usd)
    phase: str = ""
    total: int = 0
    #: Calls made in this phase.
    phase_calls: int = 0
    #: Retries by cause (rate_limit, transient, malformed, unparseable, ...).
    retries: Counter[str] = attrs.field(factory=Counter)
    #: Failed items by final error kind; skipped items by reason (quota, budget, ...).
    failures: Counter[str] = attrs.field(factory=Counter)
    skips: Counter[str] = attrs.field(factory=Counter)
    max_attempts_seen: int = 0
    cancelled: bool = False
    wall_s: float = 0.0
    lanes: dict[str, LaneStats] = attrs.field(factory=dict)
    #: Items of a streamed phase never taken from the iterable because the phase stopped
    #: (cancelled, or a record could not be written): not built, no ``on_done``. Counted
    #: when the iterable has a length.
    unstarted: int = 0
