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
    assert "task qa: sampling.total" in result.output and "1 datapoints of a above it (qa__a__00003) stay on disk" in result.output


def test_allow_drift_says_what_is_kept_and_left_out(finished: Path) -> None:
    raw = copy.deepcopy(BASE)
    raw["tasks"][0]["sampling"]["total"] = 2
    result = _continue(finished, raw, "--allow-drift")
    assert result.exit_code == 0, result.output
    assert "1 datapoints of b above it (qa__b__00003) stay on disk with their answers and judgments, left out of status and analysis" in result.output


def test_a_limit_or_a_subset_is_not_a_shrink(finished: Path) -> None:
    assert CliRunner().invoke(cli, ["run", "c.yaml", "--continue", "--limit", "1"]).exit_code == 0
    assert CliRunner().invoke(cli, ["run", "c.yaml", "--continue", "--models", "a"]).exit_code == 0


def test_analyze_leaves_out_a_model_removed_with_allow_drift(work: Path) -> None:
    """After --allow-drift on a config without model c, status counts a and b only; the
    analysis ranks a and b only too, and warns naming c, whose records stay on disk."""
    import json

    three = copy.deepcopy(BASE)
    three["models"].append(mock_model("c", seed=3))
    path = work / "c.yaml"
    path.write_text(yaml.safe_dump(three))
    assert CliRunner().invoke(cli, ["run", "c.yaml"]).exit_code == 0
    result = _continue(path, BASE, "--allow-drift")
    assert result.exit_code == 0, result.output
    run = work / "runs" / "exp"
    on_disk = sum(1 for f in (run / "phase5_evaluations").glob("*.jsonl") for line in f.read_text().splitlines()
                  if '"c"' in line)  # fmt: skip
    assert on_disk > 0
    result = CliRunner().invoke(cli, ["analyze", "--run", str(run), "--out", str(work / "out"), "--bootstrap", "0"])
    assert result.exit_code == 0, result.output
    summary = json.loads((work / "out" / "summary.json").read_text())
    assert set(summary["students"]) == {"a", "b"}
    assert set(summary["judges"]) == {"a", "b"}
    assert summary["data_quality"]["left_out_models"] == {"judge": ["c"], "student": ["c"], "teacher": ["c"]}
    assert summary["data_quality"]["n_left_out_by_config"] > 0
    left = [w for w in summary["warnings"] if w["kind"] == "left_out_by_config"]
    assert {w["subject"] for w in left} == {"c"} and "no longer a judge" in " ".join(w["message"] for w in left)
    assert "c: no longer a" in result.output


@pytest.mark.slow
def test_a_complete_cross_product_above_the_total_is_no_shrink(work: Path) -> None:
    """``target_attributes: complete`` writes every combination phase 1 found, more than the
    total of 2: those slots are the run's own, and --continue goes on with nothing left out."""
    raw = copy.deepcopy(BASE)
    raw["tasks"] = [task(total=2, target_attributes="complete")]
    path = work / "c.yaml"
    path.write_text(yaml.safe_dump(raw))
    assert CliRunner().invoke(cli, ["run", "c.yaml"]).exit_code == 0
    run = work / "runs" / "exp"
    assert sum(1 for f in (run / "phase3_datapoints").glob("*.jsonl") for _ in f.read_text().splitlines()) > 2 * 2
    result = _continue(path, raw)
    assert result.exit_code == 0, result.output
    assert "sampling.total" not in result.output
    analysed = CliRunner().invoke(cli, ["analyze", "--run", str(run), "--out", str(work / "out"), "--bootstrap", "0"])
    assert analysed.exit_code == 0, analysed.output
    import json

    quality = json.loads((work / "out" / "summary.json").read_text())["data_quality"]
    assert (quality["left_out_datapoints"], quality["n_left_out_by_config"]) == ({}, 0)
