"""``coeval view`` on a synthetic run of N judge records: how soon pages come back and how
much memory the server holds.

Two starts of a real ``coeval view`` process: *cold* (an empty cache folder: the server
listens at once and DuckDB reads the JSONL into its database in a background thread,
judgments first) and *warm* (the cached database from the cold start; the usual case after
the first look, or after ``coeval analyze``, which builds it). For each: seconds from
launching the process to the start page's HTML (on a cold start, either the full page or,
when the judgments are not read within half a second, the "indexing n%" page with a
preliminary ranking read straight from the files), then, cold, until the judgments and then every table are read (``/api/status``),
then a filtered and sorted page, then a datapoint page. The server's peak resident memory
is read from ``/proc/<pid>/status`` (VmHWM).

    python -m benchmarks.viewer                   # 1,000,000 records
    python -m benchmarks.viewer --records 100000
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from benchmarks.analysis import build_run

TARGET_START_S = 2.0
TARGET_FILTERED_S = 1.0
TARGET_PEAK_MB = 1024.0
_FILTERED = "/r/0/?judge=judge-2&factor=accuracy&score=High&sort=disagreement"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str, timeout: float = 120.0) -> tuple[float, str]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=timeout) as reply:
        body = reply.read().decode("utf-8")
    return time.perf_counter() - started, body


def _peak_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    found = re.search(r"VmHWM:\s+(\d+) kB", status)
    return int(found.group(1)) / 1024.0 if found else float("nan")


def _kind(body: str) -> str:
    """Which start page came: the full one, or "indexing n%" with which ranking."""
    for marker, kind in (('id="ranking"', "full"), ('id="analysis-ranking"', "indexing, last analysis's ranking"),
                         ('id="preliminary-ranking"', "indexing, preliminary ranking")):
        if marker in body:
            return kind
    return "indexing, students only"


def _wait_status(base: str, key: str, launched: float) -> float:
    """Seconds from launch until every run's ``/api/status`` entry says ``key``."""
    while True:
        runs = json.loads(_get(base + "/api/status")[1])["runs"]
        if any(r["error"] for r in runs):
            raise RuntimeError(f"coeval view could not read the run: {runs}")
        if all(r[key] for r in runs):
            return time.perf_counter() - launched
        time.sleep(0.05)


def _serve_and_measure(run: Path, cache: Path) -> dict[str, Any]:
    port = _free_port()
    env = {**os.environ, "COEVAL_VIEW_CACHE": str(cache)}
    launched = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "coeval.cli.main", "view", "--run", str(run), "--port", str(port),
                             "--no-browser"], env=env, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError("coeval view exited before serving") from None
                time.sleep(0.02)
        listening = time.perf_counter() - launched
        page_s, body = _get(base + "/r/0/")
        start_s = time.perf_counter() - launched
        judgments_s = _wait_status(base, "judgments_ready", launched)
        # a filtered page while the rest is still being read (the build competes for the CPU)
        indexing = not json.loads(_get(base + "/api/status")[1])["runs"][0]["ready"]
        during_s = _get(base + _FILTERED)[0] if indexing else float("nan")
        ready_s = _wait_status(base, "ready", launched)
        filtered_s, filtered = _get(base + _FILTERED)
        first = re.search(r'class="dp-link" href="([^"]+)"', filtered)
        datapoint_s = _get(base + first.group(1))[0] if first else float("nan")
        return {
            "listening_s": round(listening, 2),
            "start_page_s": round(start_s, 2),
            "start_page_request_s": round(page_s, 2),
            "start_page_kind": _kind(body),
            "judgments_ready_s": round(judgments_s, 2),
            "all_ready_s": round(ready_s, 2),
            "filtered_page_s": round(filtered_s, 2),
            "filtered_page_while_indexing_s": round(during_s, 2),
            "datapoint_page_s": round(datapoint_s, 2),
            "peak_mb": round(_peak_mb(proc.pid), 1),
            "students_listed": body.count('class="student-link"'),
        }
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def run(n_records: int = 1_000_000, *, workdir: Path | None = None) -> dict[str, Any]:
    run_dir, _ = build_run(n_records, workdir)
    records = sum(1 for p in (run_dir / "phase5_evaluations").glob("*.jsonl") for _ in p.open("rb"))
    with tempfile.TemporaryDirectory(prefix="coeval-bench-view-") as tmp:
        cold = _serve_and_measure(run_dir, Path(tmp))
        warm = _serve_and_measure(run_dir, Path(tmp))
    peak = max(cold["peak_mb"], warm["peak_mb"])
    return {
        "name": "viewer",
        "n_records": records,
        "cold": cold,
        "warm": warm,
        "target_start_s": TARGET_START_S,
        "target_filtered_s": TARGET_FILTERED_S,
        "target_peak_mb": TARGET_PEAK_MB,
        # the start target holds for both starts: cold, the page may be the "indexing n%" one
        "ok": max(cold["start_page_s"], warm["start_page_s"]) <= TARGET_START_S
        and max(cold["filtered_page_s"], warm["filtered_page_s"]) <= TARGET_FILTERED_S
        and not cold["filtered_page_while_indexing_s"] > TARGET_FILTERED_S
        and peak <= TARGET_PEAK_MB,
        "cpu_count": os.cpu_count(),
        "load_average": round(os.getloadavg()[0], 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.viewer", description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    result = run(args.records)
    print(json.dumps(result, indent=2))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
