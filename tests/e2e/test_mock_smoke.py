"""The offline smoke run from the README: `coeval run --config examples/mock_smoke.yaml`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

#: the whole pipeline through the CLI in a subprocess
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "mock_smoke.yaml"


def coeval(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    code = "import sys; from coeval.cli.main import main; main(sys.argv[1:])"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "COLUMNS": "150"})


def count(folder: Path) -> int:
    return sum(1 for f in folder.glob("*.jsonl") for line in f.read_text().splitlines() if line.strip())


def test_mock_smoke_runs_offline_end_to_end(tmp_path):
    config = tmp_path / "mock_smoke.yaml"
    shutil.copy(EXAMPLE, config)
    done = coeval("run", "--config", str(config), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run = tmp_path / "runs" / "mock-smoke"
    assert count(run / "phase3_datapoints") == 10
    assert count(run / "phase4_responses") == 20
    assert count(run / "phase5_evaluations") == 40
    meta = json.loads((run / "meta.json").read_text())
    assert meta["status"] == "completed"
    assert meta["phases_completed"] == ["attribute_mapping", "rubric_mapping", "data_generation",
                                        "response_collection", "evaluation"]
    evaluations = [json.loads(line) for f in (run / "phase5_evaluations").glob("*.jsonl")
                   for line in f.read_text().splitlines()]
    assert Counter(e["status"] for e in evaluations) == {"ok": 40}
    assert all(set(e["scores"]) == {"correctness", "completeness"} for e in evaluations)
    assert len({e["id"] for e in evaluations}) == 40
    # the run log is JSON lines
    for line in (run / "run.log").read_text().splitlines():
        json.loads(line)

    status = coeval("status", "--run", str(run), "--json", cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert [p["state"] for p in json.loads(status.stdout)["phases"]] == ["complete"] * 5

    again = coeval("run", "--config", str(config), "--continue", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert count(run / "phase5_evaluations") == 40  # nothing repeated

    fresh = coeval("run", "--config", str(config), cwd=tmp_path)
    assert fresh.returncode == 2 and "V-11" in fresh.stderr
