"""The students table of ``coeval analyze`` shows answers that failed (or got no usable
score) and the judgments of that student's answers that failed, each out of its total."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from coeval.cli.main import cli

from .runs import datapoint, evaluation, response, write_run

RUBRIC = {"accuracy": "Correct.", "clarity": "Clear."}
DPS = [datapoint("t", "teach", i + 1) for i in range(4)]
GOOD = {"accuracy": "High", "clarity": "Low"}


def test_judge_failures_are_counted_per_student_and_shown(tmp_path: Path) -> None:
    answers = [response(dp, s) for dp in DPS for s in ("s1", "s2")]
    evaluations: list[dict[str, Any] | str] = []
    for r in answers:
        for judge in ("j1", "j2"):
            # j2 fails on three of s2's answers (each still scored by j1), and on one of s1's
            broken = judge == "j2" and ((r["student_model_id"] == "s2" and not r["id"].startswith("t__teach__00004"))
                                        or r["id"] == "t__teach__00001__s1")
            evaluations.append(evaluation(r, judge, {}, status="failed", error_kind="timeout") if broken
                               else evaluation(r, judge, GOOD))
    run = write_run(tmp_path / "r", rubric=RUBRIC, datapoints=DPS, responses=answers, evaluations=evaluations)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["analyze", "--run", str(run), "--out", str(out), "--bootstrap", "0"],
                                terminal_width=200)
    assert result.exit_code == 0, result.output
    students = json.loads((out / "summary.json").read_text())["students"]
    assert (students["s1"]["n_judgments"], students["s1"]["n_judgments_failed"]) == (8, 1)
    assert (students["s2"]["n_judgments"], students["s2"]["n_judgments_failed"]) == (8, 3)
    report = (out / "report.html").read_text(encoding="utf-8")
    assert '<th scope="col">failed judgments</th>' in report
