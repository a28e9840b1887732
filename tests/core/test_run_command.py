"""``coeval run`` end to end on the mock interface, and its flags."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli

ROOT = Path(__file__).parents[2]


@pytest.fixture
def work(work: Path) -> Path:
    """The shared isolated folder, holding a copy of the mock smoke config."""
    shutil.copy(ROOT / "examples" / "mock_smoke.yaml", work / "mock_smoke.yaml")
    return work


def count_records(folder: Path) -> int:
    return sum(len(p.read_text(encoding="utf-8").splitlines()) for p in folder.glob("*.jsonl"))


def test_mock_smoke_runs_offline(work: Path) -> None:
    result = CliRunner().invoke(cli, ["run", "--config", "mock_smoke.yaml"])
    assert result.exit_code == 0, result.output
    run = work / "runs" / "mock-smoke"
    assert count_records(run / "phase3_datapoints") == 10
    assert count_records(run / "phase4_responses") == 20
    assert count_records(run / "phase5_evaluations") == 40
    meta = json.loads((run / "meta.json").read_text(encoding="utf-8"))
    assert set(meta["phases_completed"]) == {
        "attribute_mapping",
        "rubric_mapping",
        "data_generation",
        "response_collection",
        "evaluation",
    }
    # running the same config again is refused (V-11) until --continue is given
    again = CliRunner().invoke(cli, ["run", "--config", "mock_smoke.yaml"])
    assert again.exit_code == 2 and "V-11 experiment.id" in again.stderr
    resumed = CliRunner().invoke(cli, ["run", "--config", "mock_smoke.yaml", "--continue"])
    assert resumed.exit_code == 0, resumed.output
    assert count_records(run / "phase5_evaluations") == 40


def test_estimate_only_writes_no_run(work: Path) -> None:
    result = CliRunner().invoke(
        cli, ["run", "--config", "mock_smoke.yaml", "--estimate-only", "--estimate-samples", "0"]
    )
    assert result.exit_code == 0, result.output
    assert "70" in result.stdout  # 10 + 20 + 40 calls
    assert not (work / "runs" / "mock-smoke" / "meta.json").exists()


def test_only_models_plan(work: Path) -> None:
    result = CliRunner().invoke(
        cli, ["run", "--config", "mock_smoke.yaml", "--dry-run", "--only-models", "mock-a"]
    )
    assert result.exit_code == 0, result.output
    assert "only models: mock-a" in result.stdout
    rows = {
        line.split()[0]: line.split()[-1]
        for line in result.stdout.splitlines()
        if line.strip().startswith("mock-")
    }
    # mock-a: 5 items + 10 answers + 20 judgements; mock-b makes no call in this process
    assert rows == {"mock-a": "35", "mock-b": "0"}


def test_help_lists_the_flags() -> None:
    result = CliRunner().invoke(cli, ["run", "--help"])
    assert result.exit_code == 0
    for flag in (
        "--config",
        "--dry-run",
        "--continue",
        "--only-models",
        "--keys",
        "--resume",
        "--probe",
        "--probe-on-fail",
        "--skip-probe",
        "--estimate-only",
        "--estimate-samples",
        "--log-level",
    ):
        assert flag in result.stdout
