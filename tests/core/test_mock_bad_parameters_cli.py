"""A ``mock`` model with out-of-range parameters, through the CLI: the dry run says why its
request body cannot be shown, and the run stops with exit code 2 naming the model once."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from coeval.cli.main import cli

REASON = "mock fault rates add up to more than 1 (1.2)"


def _config(folder: Path) -> Path:
    config = {
        "models": [
            {"name": "m", "interface": "mock", "roles": ["teacher", "judge"]},
            {"name": "s", "interface": "mock", "roles": ["student"],
             "parameters": {"failure_rate": 0.7, "rate_limit_rate": 0.5}},
        ],
        "tasks": [{"name": "qa", "description": "Answer a question.", "target_attributes": {"topic": ["a", "b"]},
                   "rubric": {"correct": "The answer is right."}, "sampling": {"total": 2}}],
        "experiment": {"id": "bad-mock", "storage_folder": "runs"},
    }
    path = folder / "bad.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def test_dry_run_names_the_bad_parameter_and_the_run_stops_with_one_clear_line(work: Path) -> None:
    path = _config(work)
    dry = CliRunner().invoke(cli, ["run", str(path), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert f"request body of s: not available ({REASON})\n" in dry.output
    run = CliRunner().invoke(cli, ["run", str(path), "-q"])
    assert run.exit_code == 2
    assert run.output.splitlines()[-1] == f"error: model 's' (mock): {REASON}"
    assert "Traceback" not in run.output
