"""The lanes' workers: as many tasks per lane as its connection's limit allows, each taking
the next item from the lane's queue and making its call, so a phase of 10,000 items costs a
few dozen tasks, not 10,000.

Lanes of phases running at once share their connection's slots (:class:`~coeval.scheduler.lanes.Slots`):
a lane that finds every slot held waits for the next one a worker gives up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from coeval.scheduler.clock import Clock
from coeval.scheduler.job import Job
from coeval.scheduler.lanes import Lane, Slots, lane_for_new_worker
from coeval.scheduler.phase_run import PhaseRun

__all__ = ["TURN_S", "YIELD_EVERY", "Workers"]

#: Workers yield to the event loop at least every this many calls, or once their turn has
#: lasted :data:`TURN_S` seconds, so zero-latency interfaces (the mock) cannot starve the
#: progress display, signal handling or other lanes: with 512 workers, 32 calls each made a
#: turn of the loop last seconds, and SIGTERM waited for it.
YIELD_EVERY = 32
TURN_S = 0.002

#: One call for a job (or its skip): finishes it or queues its retry (:class:`~coeval.scheduler.calls.Caller`).
Attempt = Callable[[PhaseRun, Lane, Job], Awaitable[None]]


class Workers:
    """Starts and runs the lanes' worker tasks. ``attempt`` makes one call; ``refill`` takes
    a streamed phase's next items into the queues when a worker finds its queue empty."""

    def __init__(self, clock: Clock, *, attempt: Attempt, refill: Callable[[PhaseRun], None]) -> None:
        self.clock = clock
        self.attempt = attempt
        self.refill = refill

    def spawn(self, run: PhaseRun, lane: Lane) -> None:
        """Start workers until the lane's connection runs at its limit (counting the lanes of
        other phases running at once) or every queued job has one; for replicas, each new
        worker goes to the admitted replica with the fewest outstanding. A lane that wants
        more workers than the limit leaves waits for the next slot given up."""
        if run.stopping:
            return
        queue = lane.queue
        if not queue.replicated:
            slots, limit = lane.slots, lane.limit
            while lane.workers - lane.in_flight < len(queue.ready):
                if slots.held >= limit.current:
                    slots.wait(run, lane)
                    return
                self._start(run, lane)
            return
        now = self.clock.now()
        while (target := lane_for_new_worker(queue, now)) is not None:
            self._start(run, target)
        if sum(m.workers - m.in_flight for m in queue.lanes) < len(queue.ready):
            for member in queue.lanes:
                member.slots.wait(run, member)

    def give_slot(self, slots: Slots) -> None:
        """A worker gave up its slot: start one for the lane that waited longest for it (its
        phase still running and its items still unserved)."""
        entries = list(slots.waiting.items())  # one pass: a lane that still cannot start waits again
        for key, (run, lane) in entries:
            if slots.waiting.get(key) is None:
                continue
            del slots.waiting[key]
            if run.stopping or run.finished.is_set():
                continue
            held = slots.held
            self.spawn(run, lane)
            if slots.held > held:
                return

    def _start(self, run: PhaseRun, lane: Lane) -> None:
        lane.workers += 1
        lane.slots.held += 1
        run.start(self._work(run, lane))

    async def _work(self, run: PhaseRun, lane: Lane) -> None:
        """One worker: calls for the lane's items until its queue is empty, its slot is gone
        or the phase stops."""
        clock = self.clock
        attempt = self.attempt
        queue = lane.queue
        ready = queue.ready
        slots = lane.slots
        handled = 0
        turn = clock.now()  # the scheduler's clock: virtual under a ManualClock, so tests are deterministic
        try:
            while not run.stopping:
                if slots.held > lane.limit.current:
                    return  # the limit shrank: this worker's slot is gone
                if lane.down and lane.workers > 1 and lane.siblings_up():
                    return  # a replica that is down keeps one worker, to probe it
                if lane.paused_until:
                    wait = lane.paused_until - clock.now()
                    if wait > 0:
                        await clock.sleep(wait)
                        continue
                    lane.paused_until = 0.0
                if not ready and run.source is not None:
                    self.refill(run)
                if not ready:
                    if queue.delayed == 0:
                        return
                    queue.wake.clear()
                    await queue.wake.wait()
                    continue
                await attempt(run, lane, ready.popleft())
                if slots.waiting and slots.others_waiting(lane):  # another phase's lane waits for a slot
                    if ready:
                        slots.wait(run, lane)  # this lane's items want it back in turn
                    return
                handled += 1
                if handled >= YIELD_EVERY or clock.now() - turn > TURN_S:
                    await asyncio.sleep(0)
                    handled, turn = 0, clock.now()
        finally:
            lane.workers -= 1
            slots.held -= 1
            if slots.waiting:
                self.give_slot(slots)
