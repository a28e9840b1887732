"""A finished run folder, as the pipeline leaves it, for ingest to add benchmarks to."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

FIXTURES = Path(__file__).parent / "fixtures"

ALL_PHASES = ["attribute_mapping", "rubric_mapping", "data_generation", "response_collection", "evaluation"]

CONFIG: dict[str, Any] = {
    "models": [
        {"name": "mock-a", "interface": "mock", "roles": ["teacher", "student", "judge"]},
    ],
    "tasks": [
        {
            "name": "summaries",
            "description": "Summarise a paragraph.",
            "output_description": "One sentence.",
            "target_attributes": {"length": ["short", "long"]},
            "sampling": {"target": [1, 1], "nuance": [0, 0], "total": 2},
            "rubric": {"accuracy": "Matches the paragraph."},
        }
    ],
    "experiment": {"id": "finished", "storage_folder": "runs"},
}


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of a run folder and its bytes (the lock file aside)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
            and p.name != ".meta.lock"}


@pytest.fixture(autouse=True)
def no_real_hub(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No benchmark test reaches the real Hugging Face hub: offline, with an empty cache of its
    own (the hub tests point HF_ENDPOINT at a local stand-in and go online)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path_factory.mktemp("hf_home")))
    for name in ("HF_HUB_CACHE", "HF_ENDPOINT", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def finished_run(tmp_path: Path) -> Path:
    root = tmp_path / "runs" / "finished"
    root.mkdir(parents=True)
    (root / "config.yaml").write_text(yaml.safe_dump(CONFIG, sort_keys=False))
    meta = {
        "experiment_id": "finished",
        "status": "completed",
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
        "phases_completed": list(ALL_PHASES),
        "phases_in_progress": [],
        "ingest_log": [],
    }
    (root / "meta.json").write_text(json.dumps(meta, indent=2))
    (root / "phase2_rubric").mkdir()
    (root / "phase2_rubric" / "summaries.rubric.json").write_text(json.dumps(CONFIG["tasks"][0]["rubric"]))
    return root
