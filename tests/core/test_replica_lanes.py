"""Per-replica lanes in the scheduler: one lane per replica sharing one queue; a replica
that refuses or keeps timing out is ejected and its items go to the others; items fail only
once every replica has been unreachable for ``connect_wait_s``, naming them all."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from coeval.interfaces.base import GenerateRequest, GenerateResult, Interface
from coeval.scheduler import AdaptiveLimit, ManualClock, Scheduler, SchedulerLimits
from coeval.scheduler.lanes import LATENCY_SAMPLES, Lane, percentile

from .scheduler_helpers import Recorder, ScriptedInterface, make_items


class Replicated(ScriptedInterface):
    """A model on replicas ``behaviour`` (url -> "ok" | "refuse" | "timeout"); calls per URL
    are counted in ``sent``."""

    def __init__(self, behaviour: dict[str, str], *, connect_wait_s: float = 300.0, **kw: Any) -> None:
        super().__init__(**kw)
        self.behaviour = behaviour
        self.sent: Counter[str] = Counter()
        self.connect_wait_s = connect_wait_s
        self.url: str | None = None

    def replica_views(self) -> list[tuple[str, Interface]]:
        views: list[tuple[str, Interface]] = []
        for url in self.behaviour:
            view = Replicated(self.behaviour, connect_wait_s=self.connect_wait_s, delay=self.delay)
            view.sent, view.url = self.sent, url
            views.append((url, view))
        return views

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        assert self.url is not None, "the scheduler calls replicas through their views"
        self.sent[self.url] += 1
        await asyncio.sleep(0)
        if self.behaviour[self.url] == "refuse":
            raise ConnectionRefusedError(self.url)
        if self.behaviour[self.url] == "timeout":
            raise TimeoutError("read timed out")
        return await super().generate(request)


def _run(iface: Replicated, n: int, clock: Any = None) -> tuple[Recorder, Any]:
    rec = Recorder()
    stats = asyncio.run(Scheduler({"m": iface}, SchedulerLimits(), clock=clock).run("evaluation", make_items(iface, n, rec)))
    return rec, stats


def test_each_replica_gets_its_own_lane_and_a_refusing_one_is_ejected() -> None:
    iface = Replicated({"http://a": "refuse", "http://b": "ok"}, delay=0.001)
    rec, stats = _run(iface, 60)
    assert rec.by_status() == {"ok": 60}
    assert all(o.attempts == 1 for o in rec.outcomes.values())  # the dead replica cost no attempt
    lanes = {lane.url: lane for lane in stats.lanes.values()}
    assert sorted(lanes) == ["http://a", "http://b"]
    assert lanes["http://a"].ejections == 1 and lanes["http://a"].calls == 0
    assert lanes["http://b"].calls == 60
    assert iface.sent["http://a"] <= 8  # its first calls, then only probes


def test_a_replica_that_keeps_timing_out_is_ejected() -> None:
    iface = Replicated({"http://slow": "timeout", "http://b": "ok"})
    rec, stats = _run(iface, 40, ManualClock())
    assert rec.by_status() == {"ok": 40}
    slow = next(lane for lane in stats.lanes.values() if lane.url == "http://slow")
    assert slow.ejections == 1
    assert iface.sent["http://slow"] < 10  # ejected after 3 in a row, then probed
    assert iface.sent["http://b"] == 40


def test_every_replica_down_fails_after_connect_wait_naming_them_all() -> None:
    clock = ManualClock()
    iface = Replicated({"http://a": "refuse", "http://b": "refuse"}, connect_wait_s=20.0)
    rec, _ = _run(iface, 3, clock)
    assert rec.by_status() == {"failed": 3}
    errors = {o.error for o in rec.outcomes.values()}
    assert errors == {"cannot connect to http://a, http://b for 20 s (connect_wait_s)"}
    assert all(o.attempts == 0 for o in rec.outcomes.values())
    assert sum(clock.sleeps) >= 20.0


def test_a_lane_keeps_a_bounded_uniform_sample_of_latencies() -> None:
    lane = Lane("k", AdaptiveLimit(1, 1))
    for ms in range(3 * LATENCY_SAMPLES):
        lane.note_latency(float(ms))
    assert len(lane.latencies_ms) == LATENCY_SAMPLES
    p50 = percentile(lane.latencies_ms, 0.5)
    assert p50 is not None and abs(p50 - 1.5 * LATENCY_SAMPLES) < 0.05 * LATENCY_SAMPLES
    assert percentile([10.0, 20.0, 30.0, 40.0], 0.5) == 20.0 and percentile([], 0.95) is None
