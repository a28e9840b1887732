"""Chaos for the commands around a run (``nox -s chaos``): ``coeval ingest``, ``coeval repair``
(and its ``--dry-run``) and ``coeval analyze`` are killed with SIGKILL at random moments,
at least 20 times each, on a run whose student is served by the fake provider server.

After each kill the same command runs again to the end; then:

* nothing is lost or duplicated: every line parses, no id appears twice, every record
  there before is still there (repair only drops what it documents dropping);
* no leftover: no temporary file in the run folder, no staging folder of analyze, no
  rehearsal folder of repair in the temp folder;
* ``meta.json``'s call counts equal the calls the fake server saw (none of these commands
  calls a model; a final ``run --continue`` does, and is counted).
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
from coeval_testing.fake_server import FakeServer
from coeval_testing.fake_server._state import FakeConfig

#: Minutes of killed processes: they run in `nox -s chaos` (which sets COEVAL_CHAOS=1), out of
#: the normal suite's time budget.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600),
              pytest.mark.skipif(not os.environ.get("COEVAL_CHAOS"), reason="chaos trials run in `nox -s chaos`")]

TRIALS = int(os.environ.get("COEVAL_CHAOS_TRIALS", "20"))  # at least 20 in `nox -s chaos`
PHASE_DIRS = ("phase3_datapoints", "phase4_responses", "phase5_evaluations")
ROWS = 1500  # rows per ingested file: the write lasts long enough for kills to land in it


def _config(tmp_path: Path, url: str) -> Path:
    config: dict[str, Any] = {
        "models": [
            {"name": "local", "interface": "vllm", "roles": ["student"],
             "parameters": {"model": "m", "base_url": url, "max_tokens": 32}},
            {"name": "worker", "interface": "mock", "roles": ["teacher", "judge"], "parameters": {"seed": 3}},
        ],
        "tasks": [{"name": "t", "description": "Answer a short question.", "output_description": "A word.",
                   "target_attributes": {"topic": ["a", "b"]}, "rubric": {"correct": "The answer is right."},
                   "sampling": {"total": 40}, "evaluation_mode": "single"}],
        "experiment": {"id": "chaos", "storage_folder": str(tmp_path / "runs"), "probe_mode": "disable"},
    }
    path = tmp_path / "chaos.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


class Commands:
    def __init__(self, tmp_path: Path, fake: FakeServer) -> None:
        self.tmp_path = tmp_path
        self.fake = fake
        self.config = _config(tmp_path, fake.url + "/v1")
        self.run = tmp_path / "runs" / "chaos"
        self.scratch = tmp_path / "tmp"
        self.scratch.mkdir()
        self.env = {**os.environ, "TMPDIR": str(self.scratch)}
        self.rng = random.Random(20261125)

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "coeval", *args]

    def ok(self, *args: str) -> str:
        done = subprocess.run(self.argv(*args), env=self.env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{' '.join(args)}: {done.stderr[-3000:]}"
        return done.stdout

    def killed(self, args: list[str], started_when: Any, window_s: float) -> bool:
        """Start the command, wait until ``started_when()`` (or a random moment of its start-up),
        then kill it at a random moment of ``window_s``. True when it was killed."""
        proc = subprocess.Popen(self.argv(*args), env=self.env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        began = time.monotonic()
        while proc.poll() is None and time.monotonic() - began < 60:
            if started_when() or self.rng.random() < 0.01:
                break
            time.sleep(0.005)
        time.sleep(self.rng.uniform(0.0, window_s))
        if proc.poll() is not None:
            return False
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return True

    # ---- checks ---------------------------------------------------------------------------
    def records(self) -> dict[str, dict[str, Any]]:
        """Every record by id; fails on a line that does not parse or an id seen twice."""
        out: dict[str, dict[str, Any]] = {}
        for folder in PHASE_DIRS:
            for path in sorted((self.run / folder).glob("*.jsonl")):
                for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                    rec = json.loads(line)
                    assert rec["id"] not in out, f"duplicate id {rec['id']} ({path.name}:{n})"
                    out[rec["id"]] = rec
        return out

    def no_leftovers(self) -> None:
        left = [p for p in self.run.rglob("*") if p.name.endswith((".tmp", ".part", ".new", ".old"))
                or ".part." in p.name or p.name.startswith(".analysis.")]
        assert left == [], left
        assert [p.name for p in self.scratch.iterdir() if p.name.startswith("coeval-")] == []

    def ledger_matches_the_server(self) -> None:
        meta = json.loads((self.run / "meta.json").read_text(encoding="utf-8"))
        assert int((meta.get("calls") or {}).get("local", 0)) == self.fake.counts["openai.chat"]

    def report(self, command: str, kills: int) -> None:
        """The figures of a finished test (``nox -s chaos`` shows them with ``-s``); every
        check above held after each trial, or the test failed before printing."""
        meta = json.loads((self.run / "meta.json").read_text(encoding="utf-8"))
        print(f"\nchaos {command}: {TRIALS} trials, {kills} killed; {len(self.records())} records, "
              f"0 lost, 0 duplicated, 0 leftovers; meta.json calls {int((meta.get('calls') or {}).get('local', 0))}"
              f" = fake server calls {self.fake.counts['openai.chat']}")


@pytest.fixture
def commands(tmp_path: Path) -> Any:
    with FakeServer(FakeConfig(latency_ms=5)) as fake:
        cmds = Commands(tmp_path, fake)
        cmds.ok("run", "--config", str(cmds.config))
        cmds.ledger_matches_the_server()
        yield cmds


def _rows(path: Path, prefix: str) -> None:
    path.write_text("".join(json.dumps({"q": f"{prefix} question {n}?", "a": str(n), "key": f"{prefix}{n:05d}"}) + "\n"
                            for n in range(ROWS)), encoding="utf-8")


def test_kill_ingest_at_random_moments(commands: Commands) -> None:
    c = commands
    kills = 0
    for trial in range(TRIALS):
        task = f"mine{trial}"
        data = c.tmp_path / f"{task}.jsonl"
        _rows(data, task)
        target = c.run / "phase3_datapoints" / f"{task}.{task}-data.datapoints.jsonl"
        args = ["ingest", "--run", str(c.run), "--file", str(data), "--task-name", task, "--prompt-field", "q",
                "--reference-field", "a", "--id-field", "key"]
        kills += c.killed(args, target.exists, 0.15)
        c.ok(*args)  # the same ingest again finishes it
        got = [json.loads(line)["id"] for line in target.read_text(encoding="utf-8").splitlines()]
        assert len(got) == len(set(got)) == ROWS
        meta = json.loads((c.run / "meta.json").read_text(encoding="utf-8"))
        mine = [e for e in meta["ingest_log"] if e.get("task_name") == task]
        assert [e.get("complete") for e in mine] == [True]
        c.records()
        c.no_leftovers()
        c.ledger_matches_the_server()
    assert kills >= TRIALS // 2
    # the rows ingested are answered (2 each, by --limit) and counted call for call
    c.ok("run", "--config", str(c.config), "--continue", "--limit", "2", "--yes")
    answered = Counter(str(r.get("task_id")) for r in c.records().values() if r.get("student_model_id") == "local"
                       and "response" in r)
    assert all(answered[f"mine{trial}"] == 2 for trial in range(TRIALS))
    c.ledger_matches_the_server()
    c.report("ingest", kills)


def _damage(run: Path, rng: random.Random) -> None:
    """What repair cleans: a duplicate line, a line cut short (any phase), a failed record
    (a judgment: a failed answer or datapoint would take its descendants with it)."""
    def some_file(folder: str) -> Path:
        return rng.choice([p for p in sorted((run / folder).glob("*.jsonl")) if p.stat().st_size])

    judged = some_file("phase5_evaluations")
    line = rng.choice(judged.read_text(encoding="utf-8").splitlines())
    failed = {**json.loads(line), "status": "failed", "error": "x", "error_kind": "fatal", "scores": {}}
    with judged.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(failed) + "\n")
    path = some_file(rng.choice(PHASE_DIRS))
    line = rng.choice(path.read_text(encoding="utf-8").splitlines(keepends=True))
    with path.open("a", encoding="utf-8") as fh:
        fh.write(line)
        fh.write(line[: len(line) // 2] + "\n")


def test_kill_repair_at_random_moments(commands: Commands) -> None:
    c = commands
    kills = 0
    for trial in range(TRIALS):
        _damage(c.run, c.rng)
        dry = trial % 3 == 2
        args = ["repair", "--run", str(c.run), *(["--dry-run"] if dry else [])]
        before = {k for k, r in c.records_lenient().items() if r.get("status", "ok") == "ok"} if not dry else set()
        # a kill at any moment of its first second: a repair of this small run ends in about
        # one, so waiting for a random start-up moment first let most of them finish
        kills += c.killed(args, lambda: True, 1.0)
        c.ok("repair", "--run", str(c.run))  # the next repair finishes the work
        after = c.records()
        assert before <= set(after)
        c.no_leftovers()
        c.ledger_matches_the_server()
    assert kills >= TRIALS // 2
    c.ok("run", "--config", str(c.config), "--continue", "--yes")  # fill what repair dropped
    c.records()
    c.ledger_matches_the_server()
    c.report("repair", kills)


def _lenient(self: Commands) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for folder in PHASE_DIRS:
        for path in sorted((self.run / folder).glob("*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue
                out[rec["id"]] = rec
    return out


Commands.records_lenient = _lenient  # type: ignore[attr-defined]


def test_kill_analyze_at_random_moments(commands: Commands) -> None:
    c = commands
    out = c.run / "analysis"
    c.ok("analyze", "--run", str(c.run), "--bootstrap", "200")
    reference = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    kills = 0
    for trial in range(TRIALS):
        args = ["analyze", "--run", str(c.run), "--bootstrap", "200", "--seed", str(trial)]
        kills += c.killed(args, lambda: any(c.run.glob(".analysis.*")), 0.3)
        files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
        assert files == reference  # the previous output, whole
        json.loads((out / "summary.json").read_text(encoding="utf-8"))
        c.ok(*args)
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        assert summary["settings"]["seed"] == trial
        c.no_leftovers()
        c.ledger_matches_the_server()
    assert kills >= TRIALS // 2
    c.report("analyze", kills)
