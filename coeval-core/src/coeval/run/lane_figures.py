"""Per-lane figures of a run, kept in ``lanes.json`` in the run folder for ``coeval status``.

At the end of each phase the scheduler's lanes (one per endpoint, one per replica of a
replicated model) are written: where the calls went, how many the server saw, the limit
the adaptive limiter settled on, the most calls in flight, latency p50/p95 of answered
calls, and how many times the server went down (replicas: ejections). A phase run again
(``--continue``) replaces its rows lane by lane, so shards of one run keep each other's.
A pipelined phase runs in passes; its rows add the passes up (:func:`add_pass`).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import attrs

from coeval.scheduler import LaneStats, SchedulerStats
from coeval.storage.run_folder import RunFolder, atomic_write_json, utc_now
from coeval.storage.safe_files import folder_lock

__all__ = ["LANES_FILE", "add_pass", "lane_rows", "read_lanes", "record_lanes"]

LANES_FILE = "lanes.json"

log = logging.getLogger("coeval.lanes")


def lane_rows(stats: SchedulerStats) -> list[dict[str, Any]]:
    """One plain row per lane of a phase's stats (lanes that made no call are left out)."""
    rows = []
    for key, lane in stats.lanes.items():
        if lane.calls == 0 and lane.ejections == 0:
            continue
        rows.append({
            "lane": key, "url": lane.url or key, "models": list(lane.models), "calls": lane.calls,
            "final_limit": lane.limit, "peak_in_flight": lane.peak_in_flight,
            "latency_p50_ms": lane.latency_p50_ms, "latency_p95_ms": lane.latency_p95_ms,
            "ejections": lane.ejections, "limit_decreases": lane.counters.decreases,
            "queue_aware": lane.queue_aware,
        })
    return rows


def add_pass(phase_lanes: SchedulerStats, stats: SchedulerStats) -> SchedulerStats:
    """``phase_lanes`` (the passes of one phase so far) with one more pass's lanes added:
    calls, pauses and ejections summed, the highest peak, the limit and limiter counters as
    the pass left them, latency percentiles as the calls-weighted mean of the passes'."""
    for key, lane in stats.lanes.items():
        before = phase_lanes.lanes.get(key)
        if before is None:
            phase_lanes.lanes[key] = lane
            continue
        calls = before.calls + lane.calls

        def weighted(a: float | None, b: float | None, before: LaneStats = before, lane: LaneStats = lane,
                     calls: int = calls) -> float | None:
            if a is None or b is None or not calls:
                return b if a is None else a
            return round((a * before.calls + b * lane.calls) / calls, 1)

        phase_lanes.lanes[key] = attrs.evolve(
            lane, calls=calls, pauses=before.pauses + lane.pauses, ejections=before.ejections + lane.ejections,
            peak_in_flight=max(before.peak_in_flight, lane.peak_in_flight),
            latency_p50_ms=weighted(before.latency_p50_ms, lane.latency_p50_ms),
            latency_p95_ms=weighted(before.latency_p95_ms, lane.latency_p95_ms),
        )
    return phase_lanes


def read_lanes(root: str | Path) -> dict[str, Any]:
    """``{"phases": {phase: {"recorded_at", "lanes": [row, ...]}}}``; empty when the file is
    missing or unreadable (figures only: never worth failing a command for)."""
    path = Path(root) / LANES_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"phases": {}}
    if not isinstance(data, dict) or not isinstance(data.get("phases"), dict):
        return {"phases": {}}
    return data


def record_lanes(run: RunFolder, phase: str, stats: SchedulerStats | None) -> None:
    """Merge a phase's lane rows into ``lanes.json`` (under a lock: shards share the file)."""
    rows = lane_rows(stats) if stats is not None else []
    if not rows:
        return
    try:
        with folder_lock(run.root / ".lanes.lock"):
            data = read_lanes(run.root)
            entry = data["phases"].get(phase)
            kept = entry.get("lanes", []) if isinstance(entry, dict) else []
            mine = {row["lane"] for row in rows}
            merged = [r for r in kept if isinstance(r, dict) and r.get("lane") not in mine] + rows
            data["phases"][phase] = {"recorded_at": utc_now(), "lanes": merged}
            atomic_write_json(run.root / LANES_FILE, data)
    except OSError as exc:  # the records are what matters; the figures can be missing
        log.warning("could not write %s: %s", LANES_FILE, exc)
