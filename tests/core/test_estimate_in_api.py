"""The cost estimate step behaves the same from Python as from `coeval run`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import attrs
from coeval import load_config, run_experiment
from coeval.run.options import RunOptions

SMOKE = Path(__file__).resolve().parents[2] / "examples" / "mock_smoke.yaml"


def _config(tmp_path: Path, **experiment_changes):
    shutil.copy(SMOKE, tmp_path / "smoke.yaml")
    config = load_config(tmp_path / "smoke.yaml")
    experiment = attrs.evolve(
        config.experiment, storage_folder=str(tmp_path / "runs"), estimate_samples=0, **experiment_changes
    )
    return attrs.evolve(config, experiment=experiment)


def test_estimate_only_writes_the_estimate_and_runs_nothing(tmp_path):
    result = run_experiment(_config(tmp_path), RunOptions(estimate_only=True, progress=False))
    assert result.exit_code == 0 and result.status == "estimated"
    estimate = json.loads((result.run_folder / "cost_estimate.json").read_text())
    assert estimate["total_calls"] == 70
    assert not (result.run_folder / "meta.json").exists()
    assert not list(result.run_folder.rglob("*.jsonl"))


def test_estimate_cost_in_the_config_estimates_then_runs(tmp_path):
    result = run_experiment(_config(tmp_path, estimate_cost=True), RunOptions(progress=False))
    assert result.exit_code == 0 and result.status == "completed"
    assert json.loads((result.run_folder / "cost_estimate.json").read_text())["total_calls"] == 70
    assert json.loads((result.run_folder / "meta.json").read_text())["phases_completed"][-1] == "evaluation"
