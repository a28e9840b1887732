"""The scheduler's state: its limits and figures, one item's job, one phase's run, and the
attributes every part of :class:`~coeval.scheduler.core.Scheduler` shares."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

import attrs

from coeval.interfaces.base import Interface
from coeval.scheduler.adaptive import AdaptiveLimit, LimitCounters
from coeval.scheduler.admission import Admission, CallJournal
from coeval.scheduler.batch import BatchExecutor
from coeval.scheduler.clock import Clock
from coeval.scheduler.lanes import Lane, Slots
from coeval.scheduler.prior import PriorAttempts
from coeval.scheduler.retry import RetryPolicy
from coeval.scheduler.work import WorkItem

__all__ = ["DEFAULT_MAX_ATTEMPTS", "UNWRITTEN", "LaneStats", "SchedulerLimits", "SchedulerStats", "Tracker",
           "max_attempts_for"]


class Tracker(Protocol):
    """What the scheduler tells a phase's progress display (``console.progress.PhaseTracker``)."""

    total: int

    def item_done(self, status: str, reason: str | None = None) -> None: ...
    def items_skipped(self, count: int, reason: str) -> None: ...
    def retried(self) -> None: ...
    def add_spend(self, usd: float) -> None: ...
    def finish(self) -> None: ...


#: Why an item did not count as done: its call finished but its record could not be
#: written (a full disk, a read-only file); the phase stops with the write error.
UNWRITTEN = "unwritten"

#: Workers yield to the event loop at least every this many calls, or once their turn has
#: lasted :data:`_TURN_S` seconds, so zero-latency interfaces (the mock) cannot starve the
#: progress display, signal handling or other lanes: with 512 workers, 32 calls each made a
#: turn of the loop last seconds, and SIGTERM waited for it.
_YIELD_EVERY = 32
_TURN_S = 0.002


#: Items routed and not yet done, at least (a streamed phase): see :meth:`Scheduler._refill`.
_MIN_BUFFER = 256
#: ... and at most this many times the lanes' current limits together.
_BUFFER_PER_SLOT = 4


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


class _Job:
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


def _carry_over(job: _Job, prior: PriorAttempts) -> None:
    """Start ``job`` where calls made before the scheduler left it (a rejected batch reply):
    its next call is a retry, with the correction note and resampling, and its record counts
    those calls, their tokens and cost."""
    job.attempts = prior.attempts
    job.parse_failures = prior.parse_failures
    job.correction = prior.correction
    job.last_kind, job.last_error = prior.error_kind, prior.correction
    job.in_tokens, job.out_tokens = prior.usage.input_tokens, prior.usage.output_tokens
    job.cost = prior.cost_usd
    job.raw, job.latency_ms, job.finish_reason = prior.raw, prior.latency_ms, prior.finish_reason
    job.errors = list(prior.attempt_errors) or None


def _note_error(job: _Job) -> None:
    """Keep each failed attempt's ``kind: message`` for the record (failures only: no cost
    on the common path)."""
    if job.errors is None:
        job.errors = []
    job.errors.append(f"{job.last_kind}: {job.last_error}")


class _PhaseRun:
    """Book-keeping of one ``Scheduler.run`` call."""

    def __init__(self, phase_id: str, stats: SchedulerStats, tracker: Tracker | None) -> None:
        self.phase_id = phase_id
        self.stats = stats
        self.tracker = tracker
        #: Items routed and not yet done (their jobs).
        self.live: set[_Job] = set()
        self.routed = 0
        self.remaining = 0
        #: Where further items come from (a streamed phase); None once exhausted.
        self.source: Iterator[WorkItem] | None = None
        self.refilling = False
        self.stopping = False
        self.stop_reason = "cancelled"
        self.finished = asyncio.Event()
        self.tasks: set[asyncio.Task[Any]] = set()
        self.lanes: dict[str, Lane] = {}
        #: connection key -> the lane its items are queued on (a replicated lane's first replica)
        self.entries: dict[str, Lane] = {}
        self.batch_running = False
        self.on_done_error: BaseException | None = None

    def settle(self) -> None:
        """Wake ``run`` when nothing is left to wait for."""
        if (self.remaining == 0 and self.source is None) or (self.stopping and not self.batch_running and all(ln.in_flight == 0 for ln in self.lanes.values())):
            self.finished.set()



class SchedulerBase:
    """The attributes the scheduler's parts share (set by ``Scheduler.__init__``), and the
    steps a lower part hands to a higher one."""

    interfaces: Mapping[str, Interface]
    limits: SchedulerLimits
    batch_executor: BatchExecutor | None
    clock: Clock
    rng: random.Random
    calls: Counter[str]
    spend_usd: float
    admission: Admission
    journal: CallJournal | None
    _limiters: dict[str, AdaptiveLimit]
    _slots: dict[str, Slots]
    _lane_keys: dict[str, str]
    _runs: set[_PhaseRun]

    def _refill(self, run: _PhaseRun) -> None:
        raise NotImplementedError

    async def _worker(self, run: _PhaseRun, lane: Lane) -> None:
        raise NotImplementedError

    def _say(self, line: str) -> None:
        raise NotImplementedError
