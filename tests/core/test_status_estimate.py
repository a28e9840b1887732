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
    assert "est. calls" in text and "estimated / actual (whole run" in text


def test_a_plain_run_records_its_estimate_and_status_shows_estimated_against_actual(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = SMOKE.read_text(encoding="utf-8").replace("{ seed: 1 }", "{ seed: 1, cost_per_call_usd: 0.001 }")
    (tmp_path / "smoke.yaml").write_text(text.replace("{ seed: 2 }", "{ seed: 2, cost_per_1k_tokens_usd: 0.01 }"),
                                         encoding="utf-8")
    runner = CliRunner()
    assert runner.invoke(cli, ["run", "--config", "smoke.yaml"]).exit_code == 0  # no estimate asked for
    root = tmp_path / "runs" / "mock-smoke"
    assert (root / "cost_estimate.json").is_file()  # the pre-spend estimate, recorded anyway
    meta = json.loads((root / "meta.json").read_text(encoding="utf-8"))
    status = json.loads(runner.invoke(cli, ["status", "--run", "runs/mock-smoke", "--json"]).output)
    rows = status["estimate_vs_actual"]
    assert set(rows) == {"calls", "input_tokens", "output_tokens", "cost_usd", "seconds"}
    assert rows["calls"] == {"estimated": 70, "actual": sum(meta["calls"].values())}
    assert rows["cost_usd"]["actual"] == round(sum(meta["spend_usd"].values()), 6) > 0
    figures = status["call_figures"].values()
    assert rows["input_tokens"]["actual"] == sum(f["input_tokens"] for f in figures) > 0
    assert rows["output_tokens"]["actual"] == sum(f["output_tokens"] for f in figures) > 0
    for key in ("input_tokens", "output_tokens", "cost_usd"):  # the mock is measured: close
        est, act = rows[key]["estimated"], rows[key]["actual"]
        assert abs(est - act) <= 0.25 * act, (key, est, act)
    assert rows["seconds"]["estimated"] is not None and rows["seconds"]["actual"] >= 0
    out = runner.invoke(cli, ["status", "--run", "runs/mock-smoke"]).output
    assert "estimated" in out and "actual" in out
    for label in ("calls", "input tokens", "output tokens", "cost $", "time"):
        assert label in out, label


def test_status_without_an_estimate_has_none(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(SMOKE, tmp_path / "smoke.yaml")
    runner = CliRunner()
    assert runner.invoke(cli, ["run", "--config", "smoke.yaml"]).exit_code == 0
    (tmp_path / "runs" / "mock-smoke" / "cost_estimate.json").unlink()  # a run from before estimates were kept
    status = json.loads(runner.invoke(cli, ["status", "--run", "runs/mock-smoke", "--json"]).output)
    assert status["estimate"] is None
    assert "estimated_calls" not in status["models"][0]
    assert status["estimate_vs_actual"] is None


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
