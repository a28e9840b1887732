"""Chaos for the money (``nox -s chaos``): a run with a quota and a budget, whose two
students are served by the fake provider server, is killed with SIGKILL at random moments
many times and continued each time; then run to its end.

After every kill and at the end:

* the server's calls equal the call ledger's (``calls.jsonl``), per model: a call's start
  line is written as its request's first bytes go to the socket
  (:mod:`coeval_providers._send_trace`), so a kill neither hides a call the server saw nor
  counts one it never saw; ``meta.json`` counts what the ledger counts once a process has reconciled it;
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
TOTAL = 200  # datapoints: 200 answers owed by each student
QUOTA = 120  # calls of student-a: fewer than its answers
BUDGET_USD = 0.0045  # about 250 calls of both students: binds before the other student's answers are paid


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
                   "sampling": {"total": TOTAL}, "evaluation_mode": "single"}],
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
        """Start a run and kill it at a random moment once the server has seen a call of it:
        with calls in flight. True when it was killed (a run that stopped at its limits
        first was not)."""
        before = sum(self.server_calls().values())
        proc = subprocess.Popen(self.argv(*args), env=self.env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        began = time.monotonic()
        while proc.poll() is None and time.monotonic() - began < 120:
            if sum(self.server_calls().values()) > before:
                break
            time.sleep(0.002)
        time.sleep(self.rng.uniform(0.0, 0.5))
        if proc.poll() is not None:
            return False
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return True

    def check(self, kills: int, *, settled: bool) -> dict[str, Any]:
        server = self.server_calls()
        ledger = self.ledger()
        assert ledger.bad_lines == []
        for model in ("student-a", "student-b"):  # none uncounted, none counted that was never sent
            assert server[model] == ledger.calls[model], (model, dict(ledger.calls), dict(server), kills)
        assert server["student-a"] <= QUOTA
        paid = [r.get("cost_usd") or 0.0 for r in self.records()]
        one_call = max(paid, default=0.0)
        spend = sum(ledger.spend_usd.values())
        assert spend <= BUDGET_USD + one_call + 1e-9, (spend, one_call)
        if settled:
            meta = json.loads((self.run / "meta.json").read_text(encoding="utf-8"))
            assert {k: v for k, v in meta["calls"].items() if k != "worker"} == \
                   {k: v for k, v in ledger.calls.items() if k != "worker"}
        return {"server": dict(server), "ledger": {k: ledger.calls[k] for k in server},
                "spend": spend, "one_call": one_call}

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
                trial.check(kills, settled=False)
        done = subprocess.run(trial.argv(*trial.resuming()), env=trial.env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 3, done.stderr[-3000:]  # stopped by the quota and the budget
        figures = trial.check(kills, settled=True)
        assert figures["ledger"]["student-a"] == QUOTA  # the ledger stopped it at its quota
        print(f"\nchaos spend: {TRIALS} trials, {kills} killed; after each the server's calls equaled the "
              f"ledger's; at the end server {figures['server']}, ledger {figures['ledger']}; spend ${figures['spend']:.6f} of ${BUDGET_USD} "
              f"(one call at most ${figures['one_call']:.6f})")
