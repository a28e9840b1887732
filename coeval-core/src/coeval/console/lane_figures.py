"""Per-lane figures of a run, kept in ``lanes.json`` in the run folder for ``coeval status``.

At the end of each phase the scheduler's lanes (one per endpoint, one per replica of a
replicated model) are written: where the calls went, how many the server saw, the limit
the adaptive limiter settled on, the most calls in flight, latency p50/p95 of answered
calls, and how many times the server went down (replicas: ejections). A phase run again
(``--continue``) replaces its rows lane by lane, so shards of one run keep each other's.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from coeval.scheduler import SchedulerStats
from coeval.storage.run_folder import RunFolder, atomic_write_json, utc_now
from coeval.storage.safe_files import folder_lock

__all__ = ["LANES_FILE", "lane_rows", "read_lanes", "record_lanes"]

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
