"""The viewer's benchmark harness on a small run: both starts are measured and every
figure the docs quote is there and consistent."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import viewer


@pytest.mark.slow
def test_the_viewer_bench_measures_a_cold_and_a_warm_start(tmp_path: Path) -> None:
    result = viewer.run(20_000, workdir=tmp_path)
    cold, warm = result["cold"], result["warm"]
    assert result["n_records"] >= 20_000
    assert warm["start_page_kind"] == "full"  # the cold start left its database for the warm one
    assert cold["start_page_kind"] in ("full", "indexing, preliminary ranking", "indexing, students only")
    for start in (cold, warm):
        assert start["students_listed"] == 5
        assert 0 < start["listening_s"] <= start["start_page_s"]
        assert start["judgments_ready_s"] <= start["all_ready_s"]
        assert 0 < start["peak_mb"] < 1024
