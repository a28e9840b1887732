"""``lanes.json``: a phase's lane rows, merged lane by lane when the phase runs again or a
shard of the same run writes its own; an unreadable file reads as empty."""

from __future__ import annotations

import json
from pathlib import Path

from coeval.run.lane_figures import LANES_FILE, read_lanes, record_lanes
from coeval.scheduler import LaneStats, LimitCounters, SchedulerStats
from coeval.storage.run_folder import RunFolder


def _stats(**lanes: int) -> SchedulerStats:
    stats = SchedulerStats(phase="evaluation")
    for key, calls in lanes.items():
        stats.lanes[key] = LaneStats(limit=8, peak_in_flight=9, pauses=0, counters=LimitCounters(decreases=2),
                                     url=f"http://{key}", models=("m",), calls=calls, latency_p50_ms=120.0,
                                     latency_p95_ms=300.5, queue_aware=True)
    return stats


def test_rows_are_merged_lane_by_lane(tmp_path: Path) -> None:
    run = RunFolder(tmp_path)
    record_lanes(run, "evaluation", _stats(a=10, b=5, idle=0))
    record_lanes(run, "evaluation", _stats(b=7))
    rows = read_lanes(tmp_path)["phases"]["evaluation"]["lanes"]
    assert [(r["lane"], r["calls"]) for r in rows] == [("a", 10), ("b", 7)]  # a kept, b replaced, idle left out
    assert rows[0] == {"lane": "a", "url": "http://a", "models": ["m"], "calls": 10, "final_limit": 8,
                       "peak_in_flight": 9, "latency_p50_ms": 120.0, "latency_p95_ms": 300.5, "ejections": 0,
                       "limit_decreases": 2, "queue_aware": True}


def test_an_unreadable_file_reads_as_empty_and_is_rewritten(tmp_path: Path) -> None:
    (tmp_path / LANES_FILE).write_text("{not json")
    assert read_lanes(tmp_path) == {"phases": {}}
    record_lanes(RunFolder(tmp_path), "response_collection", _stats(a=1))
    assert list(json.loads((tmp_path / LANES_FILE).read_text())["phases"]) == ["response_collection"]
