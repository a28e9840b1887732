"""Chaos: kill a run with SIGKILL at random moments, resume with --continue, and check that
the result equals an uninterrupted run: same ids, same content, no duplicate, no truncated
line, and no item scheduled again once its record was written.

The fast variant (normal suite) forks the already-imported test process for each attempt, so
20+ kills take seconds; the slow variant (``nox -s chaos``) kills the real ``coeval run``
command line.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from coeval.storage.run_folder import RunFolder

from .pipeline_support import make_config, mock_model, run, task

PHASES = ("data_generation", "response_collection", "evaluation")
#: Fields that legitimately differ between two runs of the same config: wall time, and the
#: input versions, which hash the input's time of making.
VOLATILE = {"generated_at", "evaluated_at", "latency_ms", "datapoint_hash", "response_hash"}


def chaos_models() -> list[dict[str, Any]]:
    # latencies spread over a range, so results trickle in and every kill lands mid-phase
    return [mock_model("alpha", latency_ms=[20, 300], seed=1), mock_model("beta", latency_ms=[20, 300], seed=2)]


def chaos_task(total: int) -> dict[str, Any]:
    return task(total=total, rubric={"correctness": "Right.", "clarity": "Clear.", "depth": "Deep enough."})


def state(run: RunFolder) -> dict[str, dict[str, Any]]:
    """Every record by id (each file must be whole: a bad line fails here)."""
    out: dict[str, dict[str, Any]] = {}
    for phase in PHASES:
        for path in run.jsonl_files(phase):
            for n, line in enumerate(path.read_text().splitlines(), 1):
                rec = json.loads(line)  # raises on a truncated line
                assert rec["id"] not in out, f"duplicate id {rec['id']} ({path.name}:{n})"
                out[rec["id"]] = rec
    return out


def present_ids(run: RunFolder) -> set[str]:
    ids: set[str] = set()
    for phase in PHASES:
        for path in run.jsonl_files(phase):
            for line in path.read_text().splitlines():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if rec.get("status") == "ok":
                    ids.add(rec["id"])
    return ids


def content(records: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {k: {f: v for f, v in r.items() if f not in VOLATILE} for k, r in records.items()}


def _child(config: Any, continue_run: bool, log_dir: str, pipeline: bool) -> None:
    """Runs in a forked process: note every item the scheduler is handed, then run."""
    from coeval.scheduler import core

    original = core.Scheduler.run

    async def noting_run(self: Any, phase_id: str, items: Any, **kwargs: Any) -> Any:
        items = list(items)
        with open(os.path.join(log_dir, f"scheduled.{os.getpid()}.txt"), "a") as fh:
            fh.write("".join(f"{i.key}\n" for i in items))
            fh.flush()
        return await original(self, phase_id, items, **kwargs)

    core.Scheduler.run = noting_run  # type: ignore[method-assign]
    result = run(config, continue_run=continue_run, pipeline=pipeline)
    os._exit(result.exit_code)


# pipelined: phases 3-5 run at once (a kill lands with all three mid-way), fewer kills
@pytest.mark.slow
@pytest.mark.parametrize(("pipeline", "wanted_kills"), [(False, 20), (True, 12)], ids=["one-by-one", "pipelined"])
def test_sigkill_at_random_moments_then_continue_equals_an_uninterrupted_run(tmp_path, pipeline, wanted_kills):
    total = 16
    reference = make_config(tmp_path, chaos_models(), [chaos_task(total)], exp_id="reference")
    assert run(reference).exit_code == 0
    expected = content(state(RunFolder.for_experiment(reference.experiment.storage_folder, "reference")))
    assert len(expected) == 2 * total * (1 + 2 + 2 * 2)

    ctx = multiprocessing.get_context("fork")
    rng = random.Random(20261121)
    log_dir = tmp_path / "scheduled"
    log_dir.mkdir()
    kills, experiments, attempts = 0, 0, 0
    while kills < wanted_kills:
        experiments += 1
        cfg = make_config(tmp_path, chaos_models(), [chaos_task(total)], exp_id=f"chaos-{experiments}")
        rf = RunFolder.for_experiment(cfg.experiment.storage_folder, cfg.experiment.id)
        while True:
            attempts += 1
            before = present_ids(rf)
            proc = ctx.Process(target=_child, args=(cfg, rf.exists(), str(log_dir), pipeline))
            proc.start()
            proc.join(rng.uniform(0.05, 0.7))
            if proc.is_alive():
                os.kill(proc.pid, signal.SIGKILL)
                proc.join()
                kills += 1
                if kills == wanted_kills // 2:  # a power cut mid-line on top: the next writer must heal the file
                    victim = rf.jsonl_files("data_generation")
                    if victim:
                        with victim[0].open("a") as fh:
                            fh.write('{"id": "cut-by-power-loss", "prom')
            else:
                assert proc.exitcode == 0, f"attempt {attempts} exited {proc.exitcode}"
            scheduled_path = log_dir / f"scheduled.{proc.pid}.txt"
            scheduled = set(scheduled_path.read_text().split()) if scheduled_path.exists() else set()
            again = scheduled & before
            assert not again, f"attempt {attempts} called items whose records were written: {sorted(again)[:5]}"
            if proc.exitcode == 0 or kills >= wanted_kills:
                break
        final = run(cfg, continue_run=rf.exists(), pipeline=pipeline)
        assert final.exit_code == 0, final.message
        got = content(state(rf))
        assert got.keys() == expected.keys()
        assert got == expected
        meta = json.loads(rf.meta_path.read_text())
        assert meta["phases_completed"][-3:] == list(PHASES)
    assert kills >= wanted_kills


@pytest.mark.slow
def test_sigkill_the_real_command_line(tmp_path):
    """`nox -s chaos`: the same check against `coeval run` itself, process start-up included."""
    total = 24
    models = [mock_model("alpha", latency_ms=[50, 600], seed=1), mock_model("beta", latency_ms=[50, 600], seed=2)]
    reference = make_config(tmp_path, models, [chaos_task(total)], exp_id="reference")
    assert run(reference).exit_code == 0
    expected = content(state(RunFolder.for_experiment(reference.experiment.storage_folder, "reference")))
    code = "import sys; from coeval.cli.main import main; main(sys.argv[1:])"
    # only the core is needed: a faster start-up leaves more of each attempt to the run itself
    env = {**os.environ, "COEVAL_DISABLE_PLUGINS": "providers,analysis,hf,benchmarks"}
    rng = random.Random(7)
    kills, experiments = 0, 0
    while kills < 20:
        experiments += 1
        exp_id = f"chaos-cli-{experiments}"
        path = tmp_path / f"{exp_id}.yaml"
        path.write_text(yaml.safe_dump({
            "models": models, "tasks": [chaos_task(total)],
            "experiment": {"id": exp_id, "storage_folder": str(tmp_path / "runs")},
        }, sort_keys=False))
        rf = RunFolder(tmp_path / "runs" / exp_id)
        for _ in range(100):
            before = present_ids(rf)
            args = [sys.executable, "-c", code, "run", "--config", str(path)]
            proc = subprocess.Popen(args + (["--continue"] if rf.exists() else []), env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            started = time.monotonic()
            size = rf.log_path.stat().st_size if rf.log_path.exists() else 0
            # mostly once the run is working; now and then during start-up
            while proc.poll() is None and time.monotonic() - started < 60:
                if (rf.log_path.stat().st_size if rf.log_path.exists() else 0) > size or rng.random() < 0.002:
                    break
                time.sleep(0.02)
            time.sleep(rng.uniform(0.0, 1.5))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                kills += 1
            else:
                assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
            if proc.stderr:
                proc.stderr.close()
            # nothing already written may be written again
            lines_now = [json.loads(line) for ph in PHASES for f in rf.jsonl_files(ph)
                         for line in f.read_text().splitlines() if line.strip()]
            ids_now = [r["id"] for r in lines_now]
            assert len(ids_now) == len(set(ids_now)), "an item was written twice"
            assert before <= set(ids_now)
            if proc.returncode == 0 or kills >= 20:
                break
        # the last kill may have come before the run folder was made: then there is nothing to continue
        done = subprocess.run([sys.executable, "-c", code, "run", "--config", str(path),
                               *(["--continue"] if rf.exists() else [])],
                              env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert content(state(rf)) == expected
    assert kills >= 20


def test_records_of_the_reference_are_complete(tmp_path: Path):
    """Sanity of the comparison itself: a different seed gives different content."""
    a = make_config(tmp_path, chaos_models(), [chaos_task(2)], exp_id="a")
    b = make_config(tmp_path, [mock_model("alpha", seed=5), mock_model("beta", seed=6)], [chaos_task(2)], exp_id="b")
    assert run(a).exit_code == 0 and run(b).exit_code == 0
    sa = content(state(RunFolder.for_experiment(a.experiment.storage_folder, "a")))
    sb = content(state(RunFolder.for_experiment(b.experiment.storage_folder, "b")))
    assert sa.keys() == sb.keys() and sa != sb
