"""The benchmark harness runs end to end (small sizes): `nox -s bench` must work on a
fresh machine, so its plumbing -- child processes, the fake server, the cached run
folder, the results file -- is tested in the normal suite."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

#: the whole bench at its quick sizes: a minute or more
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(600)
def test_quick_benchmarks_run_and_write_results(tmp_path: Path) -> None:
    import coeval_testing.fake_server  # noqa: F401  (the throughput benchmark starts it)
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.run", "--quick", "--only", "limiter,streaming,throughput,overhead,estimates,resume", "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "a. pipeline throughput" in proc.stdout and "c. resume scan" in proc.stdout
    report = json.loads(out.read_text(encoding="utf-8"))
    results = report["results"]
    assert report["machine"]["cpu_count"] >= 1
    assert results["throughput"]["calls"] == 1240  # the medium shape with 2 datapoints per teacher
    assert results["throughput"]["client_cpu_ms_per_call"] > 0
    assert results["overhead"]["calls"] == 1240
    assert results["limiter"]["calls"] == 1240 and results["limiter"]["peak_in_flight"] > 0
    assert results["streaming"]["calls"] > 0 and results["streaming"]["unstarted"] > 0  # SIGTERM stopped it
    mock = results["estimates"]["shapes"]["mock"]  # the estimate against the run it made
    assert mock["calls"] == 1240 and mock["estimated_s"] > 0 and mock["actual_s"] > 0
    assert mock["ratio"] == pytest.approx(mock["estimated_s"] / mock["actual_s"], rel=0.05)
    assert "b2. time estimate" in proc.stdout
    assert results["resume"]["evaluation_records"] == 10_000
    assert results["resume"]["records_untouched"] is True  # --continue on a finished run wrote nothing
