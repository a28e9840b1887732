"""After SIGTERM each phase's summary line says what is missing: a pipelined phase stopped
before its passes listed every item counts those too (it said "88/88 done" with 8
missing, "34/42 done, 8 cancelled" with 30 missing)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow


def _config(tmp_path: Path) -> Path:
    def model(name: str, seed: int) -> dict[str, object]:
        return {"name": name, "interface": "mock", "roles": ["teacher", "student", "judge"],
                "parameters": {"seed": seed, "latency_ms": [100, 400]}}

    raw = {
        "models": [model("a", 1), model("b", 2)],
        "tasks": [{"name": "qa", "description": "Answer a short question.", "output_description": "One sentence.",
                   "target_attributes": {"topic": ["x", "y"]}, "rubric": {"correct": "Right.", "clear": "Clear."},
                   "sampling": {"total": 12}, "evaluation_mode": "single"}],
        "experiment": {"id": "term", "storage_folder": str(tmp_path / "runs"), "probe_mode": "disable"},
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_the_summary_after_sigterm_counts_every_missing_item(tmp_path: Path) -> None:
    config = _config(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "coeval", "run", str(config), "--yes"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    answers = tmp_path / "runs" / "term" / "phase4_responses"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and sum(len(p.read_text().splitlines()) for p in answers.glob("*.jsonl")) < 4:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    status = subprocess.run([sys.executable, "-m", "coeval", "status", "--run", str(tmp_path / "runs" / "term"),
                             "--json"], capture_output=True, text=True, timeout=120)
    missing = {p["phase"]: p["total"]["missing"] + p["total"]["failed"] for p in json.loads(status.stdout)["phases"]}
    lines = {m.group(1): m for m in re.finditer(r"^(\w+): (\d+)/(\d+) done(?:, (\d+) cancelled)?", err, re.M)}
    assert "evaluation" in lines, err
    assert missing["evaluation"] > 0  # stopped while judging
    for phase, m in lines.items():
        done, total, cancelled = int(m.group(2)), int(m.group(3)), int(m.group(4) or 0)
        assert total - done == cancelled == missing[phase], (phase, m.group(0), missing[phase])
