"""Lanes and their queues: where the scheduler's workers take calls from and run them.

A *lane* is one endpoint with its own adaptive limit, calls in flight and server-down
state. Usually a lane has its own queue. A model served by several replicas
(``parameters.base_url`` as a list) gets one lane per replica, all taking items from one
shared queue: each replica's limit then settles near that replica's own capacity, a fast
replica takes more calls than a slow one, and a replica that is down holds no item (its
calls go to the others while it is probed).

New workers go to the admitted replica with the fewest calls outstanding
(:func:`lane_for_new_worker`); a running worker keeps taking items while its replica has
room under its limit.
"""

from __future__ import annotations

import asyncio
import random
from collections import deque
from typing import TYPE_CHECKING, Any

from coeval.scheduler.adaptive import AdaptiveLimit
from coeval.scheduler.server_wait import DEFAULT_CONNECT_WAIT_S, ServerWait

if TYPE_CHECKING:
    from coeval.interfaces.base import Interface

__all__ = ["TIMEOUTS_TO_EJECT", "Lane", "LaneQueue", "Slots", "lane_for_new_worker", "percentile"]

#: A replica that times out this many calls in a row is ejected like one that refuses.
TIMEOUTS_TO_EJECT = 3
#: Latencies kept per lane and phase for its p50/p95: past this many, a uniform sample
#: (reservoir sampling), so a phase of a million calls costs no more memory than 10,000.
LATENCY_SAMPLES = 10_000


class Slots:
    """One connection's calls in flight and workers across the phases running at once
    (pipelined phases each have their own lanes on the same connection): together they stay
    within the connection's limit, and a lane left waiting for a slot gets the next one a
    worker gives up, so no phase starves another."""

    __slots__ = ("held", "in_flight", "waiting")

    def __init__(self) -> None:
        self.held = 0  # workers of every lane on this connection
        self.in_flight = 0
        #: lanes with ready items that found every slot held, first come first served
        self.waiting: dict[int, tuple[Any, Lane]] = {}

    def wait(self, run: Any, lane: Lane) -> None:
        """Queue ``lane`` for the next slot given up (behind the lanes already waiting)."""
        self.waiting.pop(id(lane), None)
        self.waiting[id(lane)] = (run, lane)

    def others_waiting(self, lane: Lane) -> bool:
        waiting = self.waiting
        return bool(waiting) and (len(waiting) > 1 or id(lane) not in waiting)


class LaneQueue:
    """Items waiting for a call, shared by the lanes (replicas) that may serve them."""

    __slots__ = ("delayed", "lanes", "ready", "wake")

    def __init__(self) -> None:
        self.ready: deque[Any] = deque()
        self.delayed = 0  # items waiting for their backoff before they rejoin ``ready``
        self.wake = asyncio.Event()
        self.lanes: list[Lane] = []

    @property
    def replicated(self) -> bool:
        return len(self.lanes) > 1


class Lane:
    """One endpoint's limit, workers and calls in flight, for the duration of one phase.

    ``pinned`` maps model name -> the interface bound to this replica (replicated lanes
    only); other lanes call the item's own interface.
    """

    __slots__ = ("_answered", "_rng", "calls", "ejections", "in_flight", "key", "latencies_ms", "limit", "models",
                 "paused_until", "pauses", "peak", "pinned", "queue", "server_wait", "slots", "timeouts_in_a_row", "url",
                 "workers")

    def __init__(self, key: str, limit: AdaptiveLimit, iface: Interface | None = None, *,
                 queue: LaneQueue | None = None, url: str | None = None, slots: Slots | None = None) -> None:
        self.key = key
        self.limit = limit
        self.slots = slots if slots is not None else Slots()
        self.server_wait = ServerWait(float(getattr(iface, "connect_wait_s", DEFAULT_CONNECT_WAIT_S)))
        self.url = url or str(getattr(iface, "server_label", "") or key)
        self.queue = queue if queue is not None else LaneQueue()
        self.queue.lanes.append(self)
        self.pinned: dict[str, Interface] = {}
        self.models: list[str] = []
        self.workers = 0
        self.in_flight = 0
        self.peak = 0
        self.paused_until = 0.0
        self.pauses = 0
        self.calls = 0  # calls the server saw (answered, failed or timed out)
        self.ejections = 0  # times the lane went from answering to down
        self.timeouts_in_a_row = 0
        self.latencies_ms: list[float] = []  # answered calls (a sample of them), for the lane's p50/p95
        self._answered = 0
        self._rng = random.Random(0)

    def note_latency(self, latency_ms: float) -> None:
        """Keep an answered call's latency (every one up to :data:`LATENCY_SAMPLES`, then a
        uniform sample of them)."""
        self._answered += 1
        if len(self.latencies_ms) < LATENCY_SAMPLES:
            self.latencies_ms.append(latency_ms)
            return
        slot = self._rng.randrange(self._answered)
        if slot < LATENCY_SAMPLES:
            self.latencies_ms[slot] = latency_ms

    @property
    def down(self) -> bool:
        """Refused or dropped its last call and has not answered since."""
        return self.server_wait.down_since is not None

    def paused(self, now: float) -> bool:
        return self.paused_until > now

    def siblings_up(self) -> bool:
        """Another replica of the same queue is answering."""
        return any(not other.down for other in self.queue.lanes if other is not self)


def lane_for_new_worker(queue: LaneQueue, now: float) -> Lane | None:
    """The replica that should get one more worker, or None when none should.

    A new worker is needed while more items are ready than admitted workers are idle. It
    goes to the admitted replica (not paused for being down) with room under its limit and
    the fewest workers; when every replica is paused and none has a worker left, one goes
    to the replica due first, to probe it.
    """
    lanes = queue.lanes
    idle = sum(lane.workers - lane.in_flight for lane in lanes if not lane.paused(now))
    if idle >= len(queue.ready):
        return None
    admitted = [lane for lane in lanes if not lane.paused(now) and lane.slots.held < lane.limit.current]
    if admitted:
        return min(admitted, key=lambda lane: lane.workers)
    if sum(lane.workers for lane in lanes) == 0:
        return min(lanes, key=lambda lane: lane.paused_until)
    return None


def percentile(values: list[float], share: float) -> float | None:
    """Nearest-rank percentile (a value that was really measured), None without values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-int(share * 100) * len(ordered) // 100))
    return round(ordered[min(rank, len(ordered)) - 1], 1)
