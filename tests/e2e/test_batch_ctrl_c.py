"""Ctrl-C while a run waits for a batch job: the run stops at once (not at the batch
deadline, which can be hours away), and ``--continue`` later collects the same job without
submitting it again. Real openai SDK over HTTP against the local fake server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from coeval_testing.fake_server import FakeServer

pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning"), pytest.mark.slow]


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    with FakeServer() as server:
        # a job takes 4 s on the provider's side; the run polls every 0.05 s meanwhile
        server.configure(batch_seconds_to_complete=4.0)
        yield server


def _config(tmp_path: Path, url: str) -> Path:
    (tmp_path / "keys.yaml").write_text(yaml.safe_dump({"providers": {"openai": "sk-ctrl-c-test-key"}}))
    config: dict[str, Any] = {
        "models": [{"name": "gpt-4o-mini", "interface": "openai", "roles": ["teacher", "student", "judge"],
                    "parameters": {"model": "gpt-4o-mini", "base_url": f"{url}/v1", "max_tokens": 100}}],
        "tasks": [{
            "name": "capitals", "description": "Answer a question about a capital city.",
            "output_description": "One sentence naming the capital.",
            "target_attributes": {"continent": ["europe", "asia"]}, "nuanced_attributes": {},
            "sampling": {"target": [1, 1], "nuance": [0, 0], "total": 2},
            "rubric": {"correctness": "The capital named is right."}, "evaluation_mode": "single",
        }],
        "experiment": {"id": "waiting", "storage_folder": str(tmp_path / "runs"), "probe_mode": "disable",
                       "batch": {"openai": {"response_collection": True}}},
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _coeval(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "COEVAL_BATCH_POLL_INTERVAL": "0.05", "COLUMNS": "120"}
    return subprocess.Popen([sys.executable, "-m", "coeval", *args, "--keys", str(tmp_path / "keys.yaml")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_ctrl_c_during_a_batch_wait_stops_within_2_s_and_continue_collects_once(
    fake: FakeServer, tmp_path: Path
) -> None:
    config = _config(tmp_path, fake.url)
    run = tmp_path / "runs" / "waiting"
    proc = _coeval(tmp_path, "run", str(config))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not fake.counts.get("openai.batches.retrieve"):
        time.sleep(0.02)  # submitted, and polled at least once: the run is waiting
    assert fake.counts.get("openai.batches.create") == 1
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    stopped_after = time.monotonic() - sent
    assert stopped_after < 2.0, err
    assert proc.returncode == 130, err
    assert "coeval run --continue" in err and "coeval status --fetch-batches" in err
    assert len(json.loads((run / "pending_batches.json").read_text())["jobs"]) == 1  # kept for later
    assert "".join(p.read_text() for p in (run / "phase4_responses").glob("*.jsonl")) == ""  # none collected yet

    resumed = _coeval(tmp_path, "run", str(config), "--continue")
    _, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    assert fake.counts.get("openai.batches.create") == 1  # the job was collected, not sent again
    answers = [json.loads(line) for p in (run / "phase4_responses").glob("*.jsonl") for line in p.read_text().splitlines()]
    assert len(answers) == 2 and all(a["status"] == "ok" for a in answers)
