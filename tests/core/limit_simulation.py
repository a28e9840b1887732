"""A server that queues and the lanes that call it, simulated call by call in virtual time:
the limiter on a quiet machine (no client jitter, no process stalls), for its tests.

The server serves ``slots`` calls at once, each ``service_s``; the rest wait in a FIFO queue
(``abort``: a call whose client timed out leaves it, or its slot, at once; else it is served
all the same, its slot time wasted). Each lane is one :class:`AdaptiveLimit` with its own
items, started as the scheduler starts them: while fewer than ``limit.current`` are in
flight. A call not answered within ``timeout_s`` counts as the scheduler counts it (a
rate-limit signal on a queue-aware lane) and its item is sent again.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque

import attrs
from coeval.scheduler import AdaptiveLimit


@attrs.define
class _Call:
    lane: int
    seq: int
    sent: float
    in_flight: int
    done: bool = False
    abandoned: bool = False


@attrs.define
class Outcome:
    """What the lanes achieved: items answered, requests sent, wall time, capacity share."""

    items: int
    requests: int
    wall_s: float
    capacity_share: float
    peaks: list[int]
    finals: list[int]

    @property
    def extra_requests(self) -> float:
        return self.requests / self.items - 1.0


def simulate(*, slots: int = 8, service_s: float = 0.100, timeout_s: float = 1.0, items: int = 420,
             lanes: int = 2, abort: bool = True, start: int = 4, maximum: int = 256) -> Outcome:
    limits = [AdaptiveLimit(start, maximum, queue_aware=True) for _ in range(lanes)]
    left = [items // lanes + (1 if k < items % lanes else 0) for k in range(lanes)]
    in_flight = [0] * lanes
    peaks = [0] * lanes
    events: list[tuple[float, int, str, _Call]] = []
    order = itertools.count()
    waiting: deque[_Call] = deque()
    busy = 0
    requests = answered = 0
    now = 0.0

    def serve(call: _Call) -> None:
        nonlocal busy
        busy += 1
        heapq.heappush(events, (now + service_s, next(order), "served", call))

    def send(lane: int) -> None:
        nonlocal requests
        while left[lane] > 0 and in_flight[lane] < limits[lane].current:
            left[lane] -= 1
            in_flight[lane] += 1
            peaks[lane] = max(peaks[lane], in_flight[lane])
            requests += 1
            call = _Call(lane, limits[lane].started(), now, in_flight[lane])
            heapq.heappush(events, (now + timeout_s, next(order), "timeout", call))
            if busy < slots:
                serve(call)
            else:
                waiting.append(call)

    for k in range(lanes):
        send(k)
    while events:
        now, _, kind, call = heapq.heappop(events)
        if kind == "served":
            busy -= 1
            if not call.abandoned:
                call.done = True
                in_flight[call.lane] -= 1
                answered += 1
                limits[call.lane].succeeded(now - call.sent, now, call.in_flight)
            while waiting and busy < slots:
                queued = waiting.popleft()
                if not queued.abandoned or not abort:
                    serve(queued)
        elif not call.done and not call.abandoned:  # the client gives up on it
            call.abandoned = True
            in_flight[call.lane] -= 1
            left[call.lane] += 1  # sent again
            limits[call.lane].rate_limited(call.seq)
            if abort and call in waiting:
                waiting.remove(call)
        for k in range(lanes):
            send(k)
        if answered == items:
            break
    return Outcome(items, requests, now, items / now / (slots / service_s), peaks, [lim.current for lim in limits])
