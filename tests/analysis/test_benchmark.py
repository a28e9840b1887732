"""The analysis benchmark that `nox -s bench` calls, on a small run (the real one is 10^6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.analysis import TARGET_PEAK_MB, TARGET_SECONDS, run


@pytest.mark.slow
def test_benchmark_times_coeval_analyze_in_a_child_process(tmp_path: Path) -> None:
    result = run(12_000, n_boot=100, workdir=tmp_path)
    assert result["name"] == "analysis"
    assert 11_000 <= result["n_records"] <= 13_000
    assert result["seconds"] > 0  # the bench, not this test, holds the time to its target
    assert 50 < result["peak_mb"] < TARGET_PEAK_MB  # the child's own peak, not this process's
    assert result["ok"] is (result["seconds"] <= TARGET_SECONDS and result["peak_mb"] <= TARGET_PEAK_MB)
    assert result["n_duplicates"] > 0 and result["n_failed"] > 0  # the run carries damage to handle
    again = run(12_000, n_boot=100, workdir=tmp_path)
    assert again["setup_seconds"] == 0.0  # the run folder is reused
