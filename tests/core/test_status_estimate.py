"""`coeval status` shows the pre-run estimate beside what the run actually did."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner
from coeval.cli.main import cli

SMOKE = Path(__file__).resolve().parents[2] / "examples" / "mock_smoke.yaml"


def test_status_puts_the_estimate_beside_calls_and_spend(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(SMOKE, tmp_path / "smoke.yaml")
    runner = CliRunner()
    est = runner.invoke(cli, ["run", "--config", "smoke.yaml", "--estimate-only", "--estimate-samples", "0"])
    assert est.exit_code == 0, est.output
    assert runner.invoke(cli, ["run", "--config", "smoke.yaml"]).exit_code == 0
    out = runner.invoke(cli, ["status", "--run", "runs/mock-smoke", "--json"])
    status = json.loads(out.output)
    assert status["estimate"]["total_calls"] == 70
    for m in status["models"]:
        assert m["estimated_calls"] == m["calls"] == 35
    text = runner.invoke(cli, ["status", "--run", "runs/mock-smoke"]).output
    assert "est. calls" in text and "estimate (whole run" in text


def test_status_without_an_estimate_has_none(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(SMOKE, tmp_path / "smoke.yaml")
    runner = CliRunner()
    assert runner.invoke(cli, ["run", "--config", "smoke.yaml"]).exit_code == 0
    status = json.loads(runner.invoke(cli, ["status", "--run", "runs/mock-smoke", "--json"]).output)
    assert status["estimate"] is None
    assert "estimated_calls" not in status["models"][0]


def test_status_counts_unreadable_lines_and_duplicate_ids(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(SMOKE, tmp_path / "smoke.yaml")
    runner = CliRunner()
    assert runner.invoke(cli, ["run", "--config", "smoke.yaml"]).exit_code == 0
    responses = sorted((tmp_path / "runs/mock-smoke/phase4_responses").glob("*.jsonl"))[0]
    first = responses.read_text().splitlines()[0]
    with responses.open("a") as fh:
        fh.write(first + "\n")  # a duplicate id
        fh.write('["not a record"]\n')  # JSON, but not a record
        fh.write('{"id": "cut-short", "resp')  # a line cut by a crash
    status = json.loads(runner.invoke(cli, ["status", "--run", "runs/mock-smoke", "--json"]).output)
    files = next(p for p in status["phases"] if p["phase"] == "response_collection")["files"]
    assert files["bad_lines"] == 2
    assert files["duplicate_ids"] == 1
    assert files["lines"] == 20 + 3
