"""The bars' ETA comes from the plan's time model until a phase's recent rate is known: a
run hands its recorded estimate's seconds per phase to the progress bars."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from coeval.console.eta import planned_left
from coeval.console.progress import PhaseTracker, ProgressReporter
from coeval.run.options import RunOptions
from coeval.run.runner import arun_experiment

from .pipeline_support import folder, make_config, mock_model, task


def test_the_plan_gives_the_eta_until_a_rate_is_known() -> None:
    reporter = ProgressReporter(enabled=False, summary=False)
    reporter.expect({"evaluation": 120.0, "data_generation": 0.0})
    tracker = PhaseTracker("evaluation", 400, reporter)
    assert tracker.eta_text() == "ETA 0:02:00"  # nothing done, no rate: the plan's 2 minutes
    assert PhaseTracker("data_generation", 10, reporter).eta_text() == "ETA -:--:--"  # no plan: unknown
    assert reporter.planned_s == {"evaluation": 120.0}


def test_planned_left_counts_what_is_done_and_what_time_is_spent() -> None:
    assert planned_left(100.0, 0, 50, 0.0) == 100.0
    assert planned_left(100.0, 25, 50, 10.0) == 90.0  # half done at 10 s: the plan's time not yet spent
    assert planned_left(100.0, 25, 50, 80.0) == 50.0  # late: the half not done, at the plan's pace
    assert planned_left(100.0, 50, 50, 10.0) == 0.0


def test_a_run_hands_its_estimate_to_the_bars(tmp_path: Path) -> None:
    config = make_config(tmp_path, [mock_model("a", seed=1, latency_ms=20)], [task(total=4)])
    reporter = ProgressReporter(enabled=False, summary=False)
    result = asyncio.run(arun_experiment(config, RunOptions(progress=False), progress=reporter))
    assert result.exit_code == 0
    recorded = json.loads((folder(config).root / "cost_estimate.json").read_text(encoding="utf-8"))["phases"]
    assert reporter.planned_s == {p: row["seconds"] for p, row in recorded.items() if row["seconds"] > 0}
    assert set(reporter.planned_s) >= {"data_generation", "response_collection", "evaluation"}
