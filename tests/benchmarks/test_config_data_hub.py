"""``tasks[].data: {dataset: org/name, split: ...}`` reads the split from the local Hugging
Face hub cache (filled here from the local hub stand-in), never from the network; a
dataset that is not cached is a validation error that says so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval_benchmarks.hub import _download

from tests.benchmarks.hub_standin import HubStandIn
from tests.benchmarks.test_hub import GSM8K, hub  # noqa: F401  (the stand-in hub fixture)


def _config(folder: Path, dataset: str) -> Path:
    raw = {
        "models": [{"name": "student", "interface": "mock", "roles": ["student", "judge"]}],
        "tasks": [{"name": "math", "description": "Solve it.", "rubric": {"right": "The answer is right."},
                   "data": {"dataset": dataset, "split": "train", "prompt": "question", "reference": "answer"}}],
        "experiment": {"id": "hub-data", "storage_folder": "runs", "probe_mode": "disable"},
    }
    path = folder / "math.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


def test_a_cached_dataset_split_is_a_tasks_data(hub: HubStandIn, tmp_path: Path,  # noqa: F811
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    missing = CliRunner().invoke(cli, ["plan", str(_config(tmp_path, "openai/gsm8k"))])
    assert missing.exit_code == 2
    assert "V-61" in missing.output and "hub cache holds no copy of it" in " ".join(missing.output.split())
    _download("openai/gsm8k", "train", "main")  # what an earlier ingest (or huggingface-cli) leaves in the cache
    result = CliRunner().invoke(cli, ["run", str(_config(tmp_path, "openai/gsm8k"))])
    assert result.exit_code == 0, result.output
    lines: list[dict[str, Any]] = [json.loads(x) for x in
                                   (tmp_path / "runs" / "hub-data" / "phase3_datapoints" /
                                    "math.math-data.datapoints.jsonl").read_text().splitlines()]
    assert [d["prompt"] for d in lines] == [f"main question {i}: what is {i} + {i}?" for i in range(1, 4)]
