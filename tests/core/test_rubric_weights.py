"""Rubric factor weights (V-63): a weight below 0, a task whose every factor weighs 0, or a
weight for a factor nothing scores stops the run with exit code 2, naming task and factor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval.config.model import TaskConfig
from coeval.evaluators.routing import judge_factors


def _config(tmp_path: Path, rubric: dict[str, Any], **task: Any) -> Path:
    raw = {
        "models": [{"name": "alpha", "interface": "mock", "roles": ["teacher", "student", "judge"]}],
        "tasks": [{"name": "code", "description": "Write the function.", "target_attributes": {"topic": ["x"]},
                   "rubric": rubric, "sampling": {"total": 2}, **task}],
        "experiment": {"id": "weights", "storage_folder": str(tmp_path / "runs")},
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.mark.parametrize(
    ("rubric", "needle"),
    [
        ({"correct": "Right.", "style": {"description": "Reads well.", "weight": -0.5}},
         "task 'code': factor 'style' has a negative weight (-0.5)"),
        ({"correct": {"description": "Right.", "weight": 0}, "style": {"description": "Reads well.", "weight": 0}},
         "task 'code': every factor has weight 0 (first: 'correct')"),
        ({"correct": "Right.", "speed": {"weight": 2}}, "task 'code': weight for unknown factor 'speed'"),
    ],
    ids=["negative", "all-zero", "unknown-factor"],
)
def test_bad_weights_exit_2_naming_task_and_factor(tmp_path: Path, rubric: dict[str, Any], needle: str) -> None:
    result = CliRunner().invoke(cli, ["run", "--config", str(_config(tmp_path, rubric)), "--dry-run"])
    assert result.exit_code == 2, result.output
    assert needle in result.stderr
    assert "V-63" in result.stderr and "Traceback" not in result.output


def test_good_weights_pass_and_a_weight_only_entry_is_not_sent_to_the_judge(tmp_path: Path) -> None:
    rubric = {"correct": {"description": "Right.", "weight": 2}, "style": "Reads well.", "gold": {"weight": 0}}
    result = CliRunner().invoke(cli, ["run", "--config", str(_config(tmp_path, rubric)), "--dry-run"])
    assert result.exit_code == 0, result.output
    task = TaskConfig(name="code", description="d", rubric=rubric)
    assert judge_factors(task, rubric) == ["correct", "style"]


def test_a_weighted_code_task_needs_no_judge(tmp_path: Path) -> None:
    """``pass@1: {weight: 2}`` beside a check: nothing for a judge to score, so no judge is asked for."""
    import json

    (tmp_path / "code.jsonl").write_text(json.dumps({"q": "Write add.", "t": "def check(f):\n    pass\n",
                                                     "e": "add"}) + "\n", encoding="utf-8")
    raw = {
        "models": [{"name": "alpha", "interface": "mock", "roles": ["student"]}],
        "tasks": [{"name": "code", "description": "Write the function.", "checker": "python_tests",
                   "data": {"file": str(tmp_path / "code.jsonl"), "prompt": "q", "tests": "t", "entry_point": "e"},
                   "rubric": {"pass@1": {"weight": 2}, "short": {"evaluator": "max_words", "params": {"limit": 50}}}}],
        "experiment": {"id": "weights", "storage_folder": str(tmp_path / "runs")},
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(raw))
    result = CliRunner().invoke(cli, ["run", "--config", str(path), "--dry-run"])
    assert result.exit_code == 0, result.output
