"""A ``mock`` model with out-of-range parameters, through the CLI: validation refuses the
config (rule V-20, naming the model and the reason), in the dry run and in the run, before
any model is set up."""

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


def test_dry_run_and_run_refuse_the_bad_parameters_with_their_rule(work: Path) -> None:
    path = _config(work)
    line = f"V-20 models[1].parameters: model 's': {REASON}"
    for args in (["run", str(path), "--dry-run"], ["run", str(path), "-q"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 2, result.output
        assert [ln for ln in result.output.splitlines() if line in ln], result.output
        assert "Traceback" not in result.output
    assert not (work / "runs").exists()  # refused before anything was written
