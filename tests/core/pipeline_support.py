"""Building configs and reading run folders in pipeline tests."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

from coeval.config.model import Config
from coeval.interfaces.base import GenerateRequest, GenerateResult
from coeval.interfaces.mock import MockInterface
from coeval.planning.cost.samples import in_estimate_sample
from coeval.plugins.config_loading import load_config
from coeval.run.options import RunOptions
from coeval.run.runner import RunResult, run_experiment
from coeval.storage.records import latest_by_id
from coeval.storage.run_folder import RunFolder, iter_jsonl

ALL_ROLES = ["teacher", "student", "judge"]


def mock_model(name: str, roles: list[str] | None = None, **parameters: Any) -> dict[str, Any]:
    return {"name": name, "interface": "mock", "roles": roles or list(ALL_ROLES), "parameters": parameters}


def task(name: str = "qa", total: int = 3, **over: Any) -> dict[str, Any]:
    t: dict[str, Any] = {
        "name": name,
        "description": "Answer a question about {braces} and the world in one sentence.",
        "output_description": "One sentence.",
        "target_attributes": {"topic": ["history", "science"], "difficulty": ["easy", "hard"]},
        "nuanced_attributes": {"tone": ["plain", "playful"]},
        "sampling": {"target": [1, 2], "nuance": [1, 1], "total": total},
        "rubric": {"correctness": "The answer is right.", "clarity": "The answer is clear."},
        "evaluation_mode": "single",
    }
    t.update(over)
    return t


def make_config(
    tmp_path: Path,
    models: list[dict[str, Any]],
    tasks: list[dict[str, Any]] | None = None,
    *,
    exp_id: str = "exp",
    **experiment: Any,
) -> Config:
    experiment.setdefault("probe_mode", "disable")  # tests of probing set it themselves
    raw = {
        "models": models,
        "tasks": tasks if tasks is not None else [task()],
        "experiment": {"id": exp_id, "storage_folder": str(tmp_path / "runs"), **experiment},
    }
    return load_config(raw, check_filesystem=False)


def run(config: Config, **options: Any) -> RunResult:
    options.setdefault("progress", False)
    return run_experiment(config, RunOptions(**options))


def folder(config: Config) -> RunFolder:
    return RunFolder.for_experiment(config.experiment.storage_folder, config.experiment.id)


def lines(run: RunFolder, phase: str) -> list[dict[str, Any]]:
    """Every parseable line of a phase (duplicates included)."""
    out: list[dict[str, Any]] = []
    for path in run.jsonl_files(phase):
        out.extend(iter_jsonl(path))
    return out


def records(run: RunFolder, phase: str) -> dict[str, dict[str, Any]]:
    return latest_by_id(lines(run, phase))


def ok_records(run: RunFolder, phase: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in records(run, phase).items() if v.get("status", "ok") == "ok"}


def meta(run: RunFolder) -> dict[str, Any]:
    return json.loads(run.meta_path.read_text())


def duplicate_ids(run: RunFolder, phase: str) -> list[str]:
    counts = Counter(r["id"] for r in lines(run, phase))
    return sorted(k for k, v in counts.items() if v > 1)


class RecordingMock(MockInterface):
    """The mock, remembering every request a run makes per model (class-level, reset by
    tests); the free calls an estimate makes to measure reply sizes are not the run's."""

    requests: ClassVar[list[tuple[str, GenerateRequest]]] = []

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        if not in_estimate_sample():
            RecordingMock.requests.append((self.model.name, request))
        return await super().generate(request)
