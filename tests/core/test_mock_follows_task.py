"""The mock behaves like a model of the task: its datapoints follow the task and output
description (length hints included) and pass the item-quality gate, so every example
config and every ``coeval init`` template runs on it with no failed item."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from coeval.cli.init_templates import TEMPLATES, render
from coeval.cli.main import cli

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted([*(REPO / "docs" / "examples").glob("*.yaml"), *(REPO / "examples").glob("*.yaml")])


def _on_mock(raw: dict[str, Any], storage: Path, total: int) -> dict[str, Any]:
    """``raw`` with every model on the mock, ``total`` datapoints per task and teacher."""
    raw = {k: v for k, v in raw.items() if not k.startswith("x-")}
    for model in raw["models"]:
        model.update(interface="mock", parameters={"model": model["name"]}, role_parameters={})
        model.pop("batch", None)
    for task in raw.get("tasks", []):
        task.setdefault("sampling", {})["total"] = total
    raw.setdefault("experiment", {}).update(storage_folder=str(storage))
    raw["experiment"].pop("resume_from", None)
    return raw


def _records(run: Path, phase: str) -> list[dict[str, Any]]:
    return [json.loads(line) for p in sorted((run / phase).glob("*.jsonl")) for line in p.read_text().splitlines()]


def test_datapoints_follow_the_task_and_its_length_hint(tmp_path: Path) -> None:
    raw = yaml.safe_load((REPO / "docs" / "examples" / "minimal.yaml").read_text())
    task = raw["tasks"][0]
    task.update(name="support_email", description="Write a customer support email replying to a complaint "
                "about a late delivery.", output_description="A polite support email of at least 80 words.")
    task.pop("prompt_library", None)
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(_on_mock(raw, tmp_path / "runs", 6)))
    result = CliRunner().invoke(cli, ["run", "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert "0 failed" in result.output
    [run] = (tmp_path / "runs").iterdir()
    datapoints = _records(run, "phase3_datapoints")
    assert len(datapoints) == 6 and all(d["status"] == "ok" for d in datapoints if "status" in d)
    for dp in datapoints:
        assert "support" in dp["prompt"] and "delivery" in dp["prompt"]  # about the task, not a random topic
        assert len(dp["reference_response"].split()) >= 80  # as long as the output description asks


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_example_config_runs_on_the_mock_with_no_failed_item(tmp_path: Path, path: Path) -> None:
    # beside a copy of what the example reads from its folder (data files, check modules)
    shutil.copytree(path.parent, tmp_path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("plugins", "*.yaml"))
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(_on_mock(yaml.safe_load(path.read_text()), tmp_path / "runs", 2)))
    result = CliRunner().invoke(cli, ["run", "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert " failed)" in result.output and all(
        "0 failed)" in line for line in result.output.splitlines() if " failed)" in line), result.output


@pytest.mark.parametrize("template", sorted(TEMPLATES))
def test_every_init_template_runs_on_the_mock_with_no_failed_item(tmp_path: Path, template: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(_on_mock(yaml.safe_load(render(template, "c.yaml")), tmp_path / "runs", 2)))
    result = CliRunner().invoke(cli, ["run", "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert all("0 failed)" in line for line in result.output.splitlines() if " failed)" in line), result.output
