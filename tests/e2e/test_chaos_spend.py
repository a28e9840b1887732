"""Chaos for the money (``nox -s chaos``): a run with a quota and a budget, whose two
students are served by the fake provider server, is killed with SIGKILL at random moments
many times and continued each time; then run to its end.

After every kill and at the end:

* the calls the server received equal, per model, those the call ledger (``calls.jsonl``)
  counts; ``meta.json`` counts the same once a process has reconciled the ledger;
* the quota holds on the server: the capped model was called at most ``max_calls`` times;
* the budget is not exceeded by more than one call's cost.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from coeval.storage.call_ledger import read_ledger
from coeval_testing.fake_server import FakeServer
from coeval_testing.fake_server._state import FakeConfig

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600),
              pytest.mark.skipif(not os.environ.get("COEVAL_CHAOS"), reason="chaos trials run in `nox -s chaos`")]

TRIALS = int(os.environ.get("COEVAL_CHAOS_TRIALS", "20"))
QUOTA = 30  # calls of student-a: fewer than its 60 answers
BUDGET_USD = 0.0012  # binds before the other student's 60 answers are paid


def _config(tmp_path: Path, url: str) -> Path:
    def student(name: str, model_id: str) -> dict[str, Any]:
        return {"name": name, "interface": "openai", "roles": ["student"],
                "parameters": {"model": model_id, "base_url": url, "max_tokens": 32}}

    config: dict[str, Any] = {
        "models": [
            student("student-a", "gpt-4o-mini"),
            student("student-b", "gpt-4.1-mini"),
            {"name": "worker", "interface": "mock", "roles": ["teacher", "judge"], "parameters": {"seed": 3}},
        ],
        "tasks": [{"name": "t", "description": "Answer a short question.", "output_description": "A word.",
                   "target_attributes": {"topic": ["a", "b"]}, "rubric": {"correct": "The answer is right."},
                   "sampling": {"total": 60}, "evaluation_mode": "single"}],
        "experiment": {"id": "spend", "storage_folder": str(tmp_path / "runs"), "probe_mode": "disable",
                       "quota": {"student-a": {"max_calls": QUOTA}}, "budget_usd": BUDGET_USD},
    }
    path = tmp_path / "spend.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


class Trial:
    def __init__(self, tmp_path: Path, fake: FakeServer) -> None:
        self.fake = fake
        self.config = _config(tmp_path, fake.url + "/v1")
        self.run = tmp_path / "runs" / "spend"
        self.env = {**os.environ, "OPENAI_API_KEY": "sk-fake-chaos"}
        self.rng = random.Random(20261207)

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "coeval", "run", "--config", str(self.config), "--yes", *args]

    def resuming(self) -> tuple[str, ...]:
        return ("--continue",) if (self.run / "meta.json").exists() else ()

    def server_calls(self) -> Counter[str]:
        by_id = Counter(e.get("model") for e in self.fake.state.requests("openai.chat"))
        return Counter({"student-a": by_id["gpt-4o-mini"], "student-b": by_id["gpt-4.1-mini"]})

    def ledger(self) -> Any:
        return read_ledger(self.run / "calls.jsonl")

    def killed_run(self, *args: str) -> bool:
        """Start a run, kill it once the server has seen a call of it (or at a random moment
        of its start-up), at a random moment after. True when it was killed."""
        before = sum(self.server_calls().values())
        proc = subprocess.Popen(self.argv(*args), env=self.env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        began = time.monotonic()
        while proc.poll() is None and time.monotonic() - began < 60:
            if sum(self.server_calls().values()) > before or self.rng.random() < 0.005:
                break
            time.sleep(0.002)
        time.sleep(self.rng.uniform(0.0, 0.4))
        if proc.poll() is not None:
            return False
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return True

    def check(self, *, settled: bool) -> dict[str, Any]:
        server = self.server_calls()
        ledger = self.ledger()
        assert ledger.bad_lines == []
        for model in ("student-a", "student-b"):
            assert ledger.calls[model] == server[model], (model, dict(ledger.calls), dict(server))
        assert server["student-a"] <= QUOTA
        paid = [r.get("cost_usd") or 0.0 for r in self.records()]
        one_call = max(paid, default=0.0)
        spend = sum(ledger.spend_usd.values())
        assert spend <= BUDGET_USD + one_call + 1e-9, (spend, one_call)
        if settled:
            meta = json.loads((self.run / "meta.json").read_text(encoding="utf-8"))
            assert {k: v for k, v in meta["calls"].items() if k != "worker"} == \
                   {k: v for k, v in ledger.calls.items() if k != "worker"}
        return {"server": dict(server), "spend": spend, "one_call": one_call}

    def records(self) -> list[dict[str, Any]]:
        out = []
        for path in sorted((self.run / "phase4_responses").glob("*.jsonl")):
            out += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        return out


def test_kill_a_run_with_a_quota_and_a_budget_at_random_moments(tmp_path: Path) -> None:
    with FakeServer(FakeConfig(latency_ms=60, jitter_ms=120)) as fake:
        trial = Trial(tmp_path, fake)
        kills = 0
        for _ in range(TRIALS):
            kills += trial.killed_run(*trial.resuming())
            if (trial.run / "calls.jsonl").exists():
                trial.check(settled=False)
        done = subprocess.run(trial.argv(*trial.resuming()), env=trial.env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 3, done.stderr[-3000:]  # stopped by the quota and the budget
        figures = trial.check(settled=True)
        assert figures["server"]["student-a"] == QUOTA
        print(f"\nchaos spend: {TRIALS} trials, {kills} killed; server calls {figures['server']} = ledger's; "
              f"spend ${figures['spend']:.6f} of ${BUDGET_USD} (one call at most ${figures['one_call']:.6f})")
