"""A ``meta.json`` field of the wrong shape, or a malformed call-ledger line: ``status`` and
``run --continue`` stop with one error line naming the file and the field (exit 2, no
traceback); ``repair`` rebuilds it, calls and spend from the ledger."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval.storage.call_ledger import read_ledger

from .pipeline_support import mock_model, task


def _raw(storage: Path) -> dict[str, Any]:
    return {"models": [mock_model("a", cost_per_call_usd=0.001), mock_model("b")], "tasks": [task(total=2)],
            "experiment": {"id": "exp", "storage_folder": str(storage), "probe_mode": "disable"}}


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("finished")
    config = base / "c.yaml"
    config.write_text(yaml.safe_dump(_raw(base / "runs")))
    done = CliRunner().invoke(cli, ["run", str(config), "--yes"])
    assert done.exit_code == 0, done.output
    return base


@pytest.fixture
def work(finished: Path, tmp_path: Path) -> Path:
    shutil.copytree(finished / "runs", tmp_path / "runs")
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(_raw(tmp_path / "runs")))
    return tmp_path


def _errors(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


@pytest.mark.parametrize(("field", "value"), [
    ("phases_completed", 5), ("calls", "lots"), ("runs", 7), ("limit", "x"), ("spend_usd", {"a": "x"}),
    ("phases_in_progress", [1]),
])
def test_a_bad_meta_field_is_one_error_and_repair_rebuilds_it(work: Path, field: str, value: Any) -> None:
    run = work / "runs" / "exp"
    meta_path = run / "meta.json"
    meta = json.loads(meta_path.read_text())
    good_calls = meta["calls"]
    meta[field] = value
    meta_path.write_text(json.dumps(meta))
    for argv in (["status", "--run", str(run)], ["run", str(work / "c.yaml"), "--continue", "--yes"]):
        result = CliRunner().invoke(cli, argv)
        assert result.exit_code == 2, (argv, result.output)
        assert "Traceback" not in result.output
        errors = _errors(result.output)
        assert len(errors) == 1, result.output
        assert str(meta_path) in errors[0] and f"field '{field}'" in errors[0], errors[0]
    repaired = CliRunner().invoke(cli, ["repair", "--run", str(run)])
    assert repaired.exit_code == 0, repaired.output
    assert f"meta.json field {field}: " in repaired.output
    after = json.loads(meta_path.read_text())
    assert after["calls"] == good_calls == {k: v for k, v in read_ledger(run / "calls.jsonl").calls.items() if v}
    status = CliRunner().invoke(cli, ["status", "--run", str(run), "--json"])
    assert status.exit_code == 0, status.output


def test_a_malformed_ledger_line_is_one_error_and_repair_drops_it(work: Path) -> None:
    run = work / "runs" / "exp"
    ledger = run / "calls.jsonl"
    lines = ledger.read_text().splitlines()
    lines.insert(3, '{"start": "x-1", "model": 5, "estimate_usd": 0}')
    ledger.write_text("\n".join(lines) + "\n")
    for argv in (["status", "--run", str(run)], ["run", str(work / "c.yaml"), "--continue", "--yes"]):
        result = CliRunner().invoke(cli, argv)
        assert result.exit_code == 2, (argv, result.output)
        errors = _errors(result.output)
        assert len(errors) == 1 and f"{ledger}:4: model must be a string" in errors[0], result.output
    repaired = CliRunner().invoke(cli, ["repair", "--run", str(run)])
    assert repaired.exit_code == 0 and "dropped 1 unreadable lines of calls.jsonl" in repaired.output
    assert CliRunner().invoke(cli, ["status", "--run", str(run)]).exit_code == 0


def test_a_lost_meta_json_is_rebuilt_counting_the_ledger_not_only_the_records(work: Path) -> None:
    """Calls in flight at a kill and failed records that repair drops were paid: a rebuilt
    meta.json counts them, so the quota goes on where it was."""
    run = work / "runs" / "exp"
    ledger = run / "calls.jsonl"
    made = read_ledger(ledger).calls["a"]
    with ledger.open("a") as fh:  # two calls a killed process had in flight
        for n in (1, 2):
            fh.write(json.dumps({"start": f"killed-{n}", "model": "a", "phase": "evaluation", "item": f"k{n}",
                                 "estimate_usd": 0.001}) + "\n")
    answers = sorted((run / "phase4_responses").glob("*.jsonl"))[0]
    recs = [json.loads(line) for line in answers.read_text().splitlines()]
    recs[0]["status"] = "failed"  # repair drops it; its call was paid all the same
    answers.write_text("".join(json.dumps(r) + "\n" for r in recs))
    (run / "meta.json").unlink()
    repaired = CliRunner().invoke(cli, ["repair", "--run", str(run)])
    assert repaired.exit_code == 0, repaired.output
    meta = json.loads((run / "meta.json").read_text())
    assert meta["calls"]["a"] == made + 2
    assert meta["spend_usd"]["a"] == pytest.approx((made + 2) * 0.001)
    assert read_ledger(ledger).open == {}  # settled at their estimate
