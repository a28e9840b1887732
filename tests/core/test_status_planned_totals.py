"""``coeval status`` counts what a phase is expected to hold from the plan's totals while an
earlier phase is still short, not only from what the earlier phases hold so far."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from coeval.cli.main import cli

RUN = Path("runs") / "starter-mock"


def _status() -> dict[str, dict[str, Any]]:
    done = CliRunner().invoke(cli, ["status", "--run", str(RUN), "--json"])
    assert done.exit_code == 0, done.output
    return {p["phase"]: p for p in json.loads(done.stdout)["phases"]}


def test_expected_is_the_plans_total_while_answers_are_missing(work: Path) -> None:
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    assert CliRunner().invoke(cli, ["run", "coeval.yaml", "-q"]).exit_code == 0
    # as if the run had stopped in phase 4: one (teacher, student) file of answers and every judgment missing
    (RUN / "phase4_responses" / "short_answer.mock-b.mock-b.responses.jsonl").unlink()
    for path in (RUN / "phase5_evaluations").glob("*.jsonl"):
        path.unlink()
    phases = _status()
    # 2 teachers x 5 items = 10 datapoints; 2 students -> 20 answers; 2 judges -> 40 judgments
    assert phases["response_collection"]["total"] == {"expected": 20, "ok": 15, "failed": 0, "missing": 5}
    assert phases["evaluation"]["total"] == {"expected": 40, "ok": 0, "failed": 0, "missing": 40}
    assert {k: g["expected"] for k, g in phases["evaluation"]["groups"].items()} == {"mock-a": 20, "mock-b": 20}
    assert phases["evaluation"]["state"] == "not started"
