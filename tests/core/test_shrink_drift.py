"""A config that leaves out part of a run (a model removed, a judge role taken away, a lower
sampling.total) is drift: --continue refuses with exit code 2 naming each change, and
--allow-drift says what stays on disk and what is left out."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from coeval.cli.main import cli
from tests.core.pipeline_support import mock_model, task

BASE: dict[str, Any] = {
    "models": [mock_model("a", seed=1), mock_model("b", seed=2)],
    "tasks": [task(total=3)],
    "experiment": {"id": "exp", "storage_folder": "runs", "probe_mode": "disable"},
}


@pytest.fixture
def finished(work: Path) -> Path:
    path = work / "c.yaml"
    path.write_text(yaml.safe_dump(BASE))
    assert CliRunner().invoke(cli, ["run", "c.yaml"]).exit_code == 0
    return path


def _continue(path: Path, raw: dict[str, Any], *extra: str) -> Any:
    path.write_text(yaml.safe_dump(raw))
    return CliRunner().invoke(cli, ["run", "c.yaml", "--continue", *extra])


def test_removing_a_model_is_refused_naming_it(finished: Path) -> None:
    raw = copy.deepcopy(BASE)
    raw["models"] = raw["models"][:1]
    result = _continue(finished, raw)
    assert result.exit_code == 2, result.output
    assert "model b: roles.judge was '12 records as judge'" in result.output
    assert "removed from the config: its 12 records stay on disk, left out of status and analysis" in result.output


def test_removing_a_judge_role_and_lowering_the_total_are_refused(finished: Path) -> None:
    raw = copy.deepcopy(BASE)
    raw["models"][1]["roles"] = ["teacher", "student"]
    raw["tasks"][0]["sampling"]["total"] = 2
    result = _continue(finished, raw)
    assert result.exit_code == 2, result.output
    assert "model b: roles.judge" in result.output and "no longer a judge" in result.output
    assert "task qa: sampling.total" in result.output and "1 datapoints of a above it stay on disk" in result.output


def test_allow_drift_says_what_is_kept_and_left_out(finished: Path) -> None:
    raw = copy.deepcopy(BASE)
    raw["tasks"][0]["sampling"]["total"] = 2
    result = _continue(finished, raw, "--allow-drift")
    assert result.exit_code == 0, result.output
    assert "1 datapoints of b above it stay on disk, left out of status and analysis" in result.output


def test_a_limit_or_a_subset_is_not_a_shrink(finished: Path) -> None:
    assert CliRunner().invoke(cli, ["run", "c.yaml", "--continue", "--limit", "1"]).exit_code == 0
    assert CliRunner().invoke(cli, ["run", "c.yaml", "--continue", "--models", "a"]).exit_code == 0
