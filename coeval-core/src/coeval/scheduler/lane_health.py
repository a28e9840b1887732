"""What the scheduler does when a lane's server answers, times out or refuses a call: a
server that refuses is waited for (``connect_wait_s``); a replica that refuses, or times out
:data:`~coeval.scheduler.lanes.TIMEOUTS_TO_EJECT` calls in a row, is ejected (its calls go
to the other replicas while it is probed) and takes its share again once it answers."""

from __future__ import annotations

from collections.abc import Callable

from coeval.scheduler.allowance import Allowance
from coeval.scheduler.clock import Clock
from coeval.scheduler.job import Job
from coeval.scheduler.lanes import TIMEOUTS_TO_EJECT, Lane
from coeval.scheduler.outcomes import Outcomes
from coeval.scheduler.phase_run import PhaseRun
from coeval.scheduler.workers import Workers

__all__ = ["LaneHealth"]


class LaneHealth:
    """Follows each lane's server: pauses, ejections and returns. ``say`` prints one line
    for the user."""

    def __init__(self, clock: Clock, allowance: Allowance, outcomes: Outcomes, workers: Workers, *,
                 say: Callable[[str], None]) -> None:
        self.clock = clock
        self.allowance = allowance
        self.outcomes = outcomes
        self.workers = workers
        self.say = say

    def answered(self, run: PhaseRun, lane: Lane, latency_ms: float) -> None:
        """The lane's server answered a call: note its latency; if it had been down, say it
        is back (a replica then takes its share again)."""
        lane.calls += 1
        lane.timeouts_in_a_row = 0
        lane.note_latency(latency_ms)
        if lane.server_wait.answered():
            lane.paused_until = 0.0
            self.say(f"{lane.url}: the server answers again")
            if lane.queue.replicated:
                self.workers.spawn(run, lane)

    def timed_out(self, lane: Lane, seq: int) -> None:
        """A call ran out of time on a server that was there. A queueing server is over
        capacity: shrink its limit. A replica that does so repeatedly is ejected (its calls
        go to the others while it is probed), like one that refuses connections."""
        if lane.limit.gradient is not None:
            lane.limit.rate_limited(seq)
        if not lane.queue.replicated:
            return
        lane.timeouts_in_a_row += 1
        if (lane.timeouts_in_a_row >= TIMEOUTS_TO_EJECT or lane.down) and lane.siblings_up():  # or a failed probe
            lane.timeouts_in_a_row = 0
            now = self.clock.now()
            if not lane.down:
                lane.ejections += 1
                self.say(f"{lane.url}: {TIMEOUTS_TO_EJECT} calls in a row timed out; its calls go to the other "
                         "replicas while it is probed")
            pause = lane.server_wait.refused(now) or lane.server_wait.max_delay_s
            lane.paused_until = max(lane.paused_until, now + pause)

    def refused(self, run: PhaseRun, lane: Lane, job: Job) -> bool:
        """The server refused or dropped the call: give the attempt back and pause the lane;
        a replica is ejected and its calls go to the other replicas while it is probed. Once
        the lane (every replica of it) has waited ``connect_wait_s`` the item fails, naming
        the server."""
        now = self.clock.now()
        first = not lane.down
        pause = lane.server_wait.refused(now)
        self.allowance.give_back(job.item.model.name)  # the server never saw this call
        run.stats.phase_calls -= 1
        job.attempts -= 1
        members = lane.queue.lanes
        if pause is None and any(not m.server_wait.exhausted(now) for m in members if m is not lane):
            pause = lane.server_wait.max_delay_s  # another replica is up or still waited for: keep probing
        if pause is None:
            urls = ", ".join(m.url for m in members)
            job.last_kind = "transient"
            job.last_error = f"cannot connect to {urls} for {lane.server_wait.wait_s:.0f} s (connect_wait_s)"
            self.outcomes.finish(run, job, "failed")
            return True
        if first:
            lane.ejections += 1
            if lane.siblings_up():
                self.say(f"{lane.url}: cannot connect; its calls go to the other replicas while it is probed")
            else:
                self.say(f"{lane.url}: cannot connect; waiting up to {lane.server_wait.wait_s:.0f} s for the server "
                         "(connect_wait_s)")
        lane.paused_until = max(lane.paused_until, now + pause)
        if run.stopping:
            self.outcomes.skip(run, job, run.stop_reason)
        else:
            lane.queue.ready.appendleft(job)
            if lane.queue.replicated:
                self.workers.spawn(run, lane)
        run.settle()
        return True
