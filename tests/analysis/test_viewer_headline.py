"""``coeval view``'s start page shows the leaderboard of ``summary.json`` (same order,
rank ranges, scores, intervals and evidence columns) and says why a place is not determined, in headless
Chromium against a real server process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from coeval_testing.synthetic import SyntheticSpec, write_synthetic_run

from tests.analysis.viewer_wait import serve_view

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def test_start_page_shows_the_headline_with_rank_ranges_of_summary_json(tmp_path: Path, page: Any) -> None:
    # one judge family grades its own students: their places rest on a prior, not determined
    run = write_synthetic_run(
        tmp_path / "run",
        SyntheticSpec(
            students={"stu-a": 0.7, "stu-b": 0.6, "stu-c": 0.5, "stu-d": 0.45},
            judges={"judge-1": 0.08, "judge-2": 0.1},
            random_judges=("judge-random",),
            families={"judge-1": "acme", "judge-2": "acme", "stu-a": "acme", "stu-b": "acme"},
            datapoints_per_teacher=8,
        ),
    )
    env = {**os.environ, "COEVAL_VIEW_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "coeval.cli.main", "analyze", "--run", str(run), "-q",
                           "--report", "summary"], env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    summary = json.loads((run / "analysis" / "summary.json").read_text())
    board = summary["leaderboard"]
    expected = [
        [r["rank_label"], r["student"], _fmt(r["headline"]),
         f"[{_fmt(r['headline_ci'][0])}, {_fmt(r['headline_ci'][1])}]",
         *(_fmt(r["evidence"][c["key"]]["score"]) for c in board["columns"])]
        for r in board["rows"]
    ]  # fmt: skip
    assert any("-" in row[0] for row in expected)  # some ranks are ranges
    for url in serve_view(["--run", str(run)], env, tmp_path):
        page.goto(url + "/")
        rows = page.locator("table#leaderboard tr").all()[1:]
        shown = [[c.strip() for c in row.locator("td").all_inner_texts()] for row in rows]
        assert shown == expected
        undetermined = [r["student"] for r in board["rows"] if r["not_determined"]]
        notes = page.locator("ul#not-determined li").all_inner_texts()
        assert [name for n in notes for name in n.split(":")[0].split(", ")] == undetermined  # one line per reason
        break
