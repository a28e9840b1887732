"""After ``run --limit N``: ``plan --continue`` counts what the full config still needs and
``status`` calls the run partial, not completed, until a run without the limit finishes it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from coeval.cli.main import cli

META = Path("runs/starter-mock/meta.json")
PARTIAL = "partial (limited to 2 datapoints per (task, teacher))"


def _coeval(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result


def _left() -> dict[str, int]:
    plan = json.loads(_coeval("plan", "--config", "coeval.yaml", "--continue", "--estimate-samples", "0", "--json").output)
    return {phase: cells["calls"] for phase, cells in plan["phases"].items()}


def test_plan_and_status_after_a_limited_run_count_the_full_config(work: Path) -> None:
    _coeval("init")  # mock starter: 2 teachers x 5 datapoints, 2 students, 2 judges
    run = _coeval("run", "coeval.yaml", "--limit", "2")
    assert "note: limited to 2 datapoints per (task, teacher); `coeval run coeval.yaml --continue` does the rest" in run.output
    assert json.loads(META.read_text())["limit"] == {"datapoints_per_task_teacher": 2,
                                                      "full_totals": {"short_answer": 5}}
    # 6 datapoints left, then their 12 answers and 24 judgments; phases 1-2 are done
    assert _left() == {"attribute_mapping": 0, "rubric_mapping": 0, "data_generation": 6,
                       "response_collection": 12, "evaluation": 24}
    assert _coeval("status", "--config", "coeval.yaml", "-q").output == f"runs/starter-mock: {PARTIAL}\n"
    status = json.loads(_coeval("status", "--config", "coeval.yaml", "--json").output)
    assert status["status"] == PARTIAL
    assert status["limit"] == {"datapoints_per_task_teacher": 2, "full_totals": {"short_answer": 5}}
    states = {p["phase"]: (p["state"], p["total"]["expected"], p["total"]["ok"]) for p in status["phases"]}
    assert states == {
        "attribute_mapping": ("complete", 2, 2),
        "rubric_mapping": ("complete", 1, 1),
        "data_generation": ("incomplete", 10, 4),
        # while datapoints are missing, the later phases expect the plan's totals: 10 x 2 and 20 x 2
        "response_collection": ("waiting for data_generation", 20, 8),
        "evaluation": ("waiting for data_generation", 40, 16),
    }
    shown = _coeval("status", "--config", "coeval.yaml").output
    assert f"status: {PARTIAL}" in shown and "completed" not in shown

    finish = _coeval("run", "coeval.yaml", "--continue")
    assert "note: limited" not in finish.output
    assert "limit" not in json.loads(META.read_text())
    assert _coeval("status", "--config", "coeval.yaml", "-q").output == "runs/starter-mock: completed\n"
    assert set(_left().values()) == {0}


def test_a_limit_that_cuts_nothing_records_nothing(work: Path) -> None:
    _coeval("init")
    run = _coeval("run", "coeval.yaml", "--limit", "50")
    assert "note: limited" not in run.output
    assert "limit" not in json.loads(META.read_text())
    assert _coeval("status", "--config", "coeval.yaml", "-q").output == "runs/starter-mock: completed\n"


def test_a_larger_limit_that_still_cuts_replaces_the_record(work: Path) -> None:
    _coeval("init")
    _coeval("run", "coeval.yaml", "--limit", "2")
    _coeval("run", "coeval.yaml", "--limit", "3", "--continue")
    assert json.loads(META.read_text())["limit"]["datapoints_per_task_teacher"] == 3
    assert _left()["data_generation"] == 4
