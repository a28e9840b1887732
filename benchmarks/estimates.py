"""How close the time estimate comes to the run: shapes that vary the number of models, the
latency, how much the phases overlap and whether answers are scored by running code. Each
shape is estimated as ``coeval plan`` does, then run; the figure is estimate / wall time,
and whether the run's time lies within the range the estimate gives.

* **mock**: the medium shape (12,400 calls) on ``interface: mock`` at 200 ms, estimated
  with ``--estimate-samples 0`` (the mock's latency is its own setting);
* **fake_server**: the medium shape through ``interface: openai`` (the real SDK) against the
  loopback fake server at 200 ms, interface defaults (the adaptive limiter decides),
  estimated with plan's two sample calls per model and phase;
* **after_a_run**: the quick start's shape (3 models, 2 teachers x 3 datapoints, phases 3-5
  pipelined) after one run of it: the estimate learns each model's latency from that run's
  records. The quick start's own model (SmolLM2 on llama.cpp) takes minutes on a loaded
  machine, so its three models are mocks that answer in 0.5 to 1.5 s here;
* **code_task**: 48 rows of a data task scored by running each answer's code against its
  tests (``checker: python_tests``), two mock students: the sandbox's time, not calls;
* **three_mocks**: three mock models in every role at 40-80 ms, phases 3-5 overlapping.

The target: each within +-30% of the run's wall time (estimate / actual in [0.77, 1.3]).

    python -m benchmarks.estimates                     # every shape
    python -m benchmarks.estimates --only mock,code_task --repeat 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks._common import fake_server_process, medium_shape, openai_keys, write_yaml

#: estimate / actual within this band (+-30% of the actual time)
TARGET_LOW, TARGET_HIGH = 1 / 1.3, 1.3
SHAPES = ("mock", "fake_server", "after_a_run", "code_task", "three_mocks")
#: sample calls per model and phase for the fake server (``coeval plan``'s default is 2)
FAKE_SERVER_SAMPLES = 2
#: rows of the code task
CODE_ROWS = 48


def _estimate(config_path: Path, keys: str | None, samples: int) -> Any:
    from coeval.planning.cost import estimate_cost
    from coeval.planning.cost.machine_speed import reading
    from coeval.plugins.config_loading import load_config
    from coeval.plugins.manager import registries

    reading.cache_clear()  # measured now, as a `coeval plan` process of its own would
    config = load_config(config_path, keys_file=keys, check_filesystem=False)  # as `coeval plan` reads it
    registries()
    return estimate_cost(config, samples=samples, keys_file=keys)


def _run(config_path: Path, keys: str | None) -> tuple[float, float, dict[str, float]]:
    """Run the config in this process: (wall s, CPU s, phase -> its own wall s)."""
    from coeval.console.progress import ProgressReporter
    from coeval.plugins.config_loading import load_config
    from coeval.run.options import RunOptions
    from coeval.run.runner import arun_experiment

    config = load_config(config_path, keys_file=keys)
    progress = ProgressReporter(enabled=False, summary=False)
    started, cpu0 = time.perf_counter(), time.process_time()
    result = asyncio.run(arun_experiment(config, RunOptions(keys_file=keys, progress=False), progress=progress))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu0
    if result.exit_code != 0:
        raise RuntimeError(f"the benchmark run ended with exit code {result.exit_code}: {result.message}")
    return wall, cpu, {t.phase_id: round(t.elapsed, 2) for t in progress.trackers}


def _machine_now() -> dict[str, float]:
    """What the estimate read of the machine: its pace against the reference machine's, the
    processes wanting each core, and the factor the CPU bound was scaled by."""
    from coeval.planning.cost.machine_speed import reading

    now = reading()
    return {"pace": round(now.pace, 3), "share": round(now.share, 2), "factor": round(now.factor, 3)}


def _row(estimate: Any, wall: float, cpu: float, phases: dict[str, float], machine: dict[str, float]) -> dict[str, Any]:
    ratio = estimate.seconds / wall if wall else float("nan")
    low, high = estimate.seconds_range
    return {
        "calls": estimate.total_calls,
        "estimated_s": round(estimate.seconds, 1),
        "range_s": [round(low, 1), round(high, 1)],
        "basis": estimate.time_basis,
        "actual_s": round(wall, 1),
        "ratio": round(ratio, 3),
        "in_range": low <= wall <= high,
        "cpu_ms_per_call": round(cpu * 1000 / estimate.total_calls, 3) if estimate.total_calls else None,
        "phases_estimated_s": {p: round(s, 1) for p, s in estimate.phase_seconds.items() if s},
        "phases_actual_s": phases,
        "machine_at_estimate": machine,
        "ok": TARGET_LOW <= ratio <= TARGET_HIGH,
    }


def _estimate_and_run(config_path: Path, keys_file: Path | None = None, samples: int = 0) -> dict[str, Any]:
    keys = str(keys_file) if keys_file else None
    estimate = _estimate(config_path, keys, samples)
    machine = _machine_now()
    return _row(estimate, *_run(config_path, keys), machine)


def mock(total: int | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="coeval-bench-est-") as tmp:
        work = Path(tmp)
        config = write_yaml(work / "exp.yaml", medium_shape("mock", {"latency_ms": 200}, storage=work / "runs",
                                                             experiment_id="bench-estimate-mock", total=total))
        return {"shape": "mock, medium shape, 200 ms", **_estimate_and_run(config)}


def fake_server(total: int | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="coeval-bench-est-") as tmp:
        work = Path(tmp)
        with fake_server_process(200) as server:
            params = {"base_url": f"{server.url}/v1", "timeout": 60}
            config = write_yaml(work / "exp.yaml", medium_shape("openai", params, storage=work / "runs",
                                                                 experiment_id="bench-estimate-fake", total=total))
            # the latency comes from plan's sample calls (free here: the server is local)
            return {"shape": "openai SDK, fake server, medium shape, 200 ms",
                    **_estimate_and_run(config, openai_keys(work), samples=FAKE_SERVER_SAMPLES)}


def _quickstart_shape(storage: Path) -> dict[str, Any]:
    """The quick start's shape on mocks: three models (two in every role, one student),
    2 teachers x 3 datapoints, 0.5-1.5 s a call."""
    def model(name: str, roles: list[str]) -> dict[str, Any]:
        return {"name": name, "interface": "mock", "roles": roles, "parameters": {"latency_ms": [500, 1500]}}

    return {
        "models": [model("greedy", ["teacher", "student", "judge"]), model("warm", ["teacher", "student", "judge"]),
                   model("hot", ["student"])],
        "tasks": [{
            "name": "short_answer",
            "description": "Answer a short general-knowledge question correctly in one or two sentences.",
            "output_description": "A correct, direct answer of one or two sentences.",
            "target_attributes": {"topic": ["geography", "science", "history"], "difficulty": ["easy", "medium"]},
            "nuanced_attributes": {"tone": ["plain", "curious"]},
            "sampling": {"target": [2, 2], "nuance": [0, 1], "total": 3},
            "rubric": {"correctness": "The answer states the right fact.",
                       "concision": "The answer is one or two clear sentences with no filler."},
            "evaluation_mode": "single",
        }],
        "experiment": {"id": "quickstart-mock", "storage_folder": str(storage), "probe_mode": "disable"},
    }  # fmt: skip


def after_a_run() -> dict[str, Any]:
    """The quick start's shape estimated from a past run of the same config, then run anew."""
    with tempfile.TemporaryDirectory(prefix="coeval-bench-est-") as tmp:
        work = Path(tmp)
        past = write_yaml(work / "past.yaml", _quickstart_shape(work / "past"))
        _run(past, None)
        estimate = _estimate(past, None, 0)  # the past run's folder: its records give the latency
        machine = _machine_now()
        fresh = write_yaml(work / "fresh.yaml", _quickstart_shape(work / "fresh"))
        return {"shape": "quick start's shape on mocks (0.5-1.5 s), after one run of it",
                **_row(estimate, *_run(fresh, None), machine)}


def _code_rows(n: int) -> list[dict[str, Any]]:
    return [{"q": f"Write f{i}(x) that returns x + {i}.", "tests": f"def check(f):\n    assert f(1) == {1 + i}\n",
             "entry": f"f{i}"} for i in range(n)]  # fmt: skip


#: the setting ``coeval run --allow-unsandboxed-code`` stands for
ALLOW_UNSANDBOXED_ENV = "COEVAL_ALLOW_UNSANDBOXED_CODE"


def _sandbox_available() -> bool:
    """Whether this machine can run code in the sandbox (else the figure runs it without)."""
    try:
        from coeval_benchmarks.sandbox.run import sandbox_kind  # type: ignore[attr-defined]
    except ImportError:
        return False
    try:
        return bool(sandbox_kind())
    except Exception:  # the sandbox cannot be made here
        return False


def code_task(rows: int = CODE_ROWS) -> dict[str, Any]:
    """``rows`` code items, two mock students (one right, one wrong): every answer's code is
    run against its tests in the sandbox."""
    with tempfile.TemporaryDirectory(prefix="coeval-bench-est-") as tmp:
        work = Path(tmp)
        (work / "code.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _code_rows(rows)), encoding="utf-8")
        right = {f"f{i}(x)": f"```python\ndef f{i}(x):\n    return x + {i}\n```" for i in range(rows)}
        raw = {
            "models": [
                {"name": "right", "interface": "mock", "roles": ["student"],
                 "parameters": {"replies": right, "latency_ms": 50}},
                {"name": "wrong", "interface": "mock", "roles": ["student"],
                 "parameters": {"replies": {"": "```python\ndef f(x):\n    return x\n```"}, "latency_ms": 50}},
            ],
            "tasks": [{"name": "code", "description": "Write the function.", "checker": "python_tests",
                       "data": {"file": str(work / "code.jsonl"), "prompt": "q", "tests": "tests",
                                "entry_point": "entry"},
                       "rubric": {"runs": {"evaluator": "json_valid"}}}],
            "experiment": {"id": "bench-estimate-code", "storage_folder": str(work / "runs"), "probe_mode": "disable"},
        }  # fmt: skip
        config = write_yaml(work / "exp.yaml", raw)
        isolated = _sandbox_available()
        before = os.environ.get(ALLOW_UNSANDBOXED_ENV)
        if not isolated:  # a machine that cannot cut the network: the bench's own code only
            os.environ[ALLOW_UNSANDBOXED_ENV] = "1"
        try:
            return {"shape": f"code task, {rows} rows x 2 students run in the sandbox"
                             + ("" if isolated else " (no network namespace here: unsandboxed)"),
                    **_estimate_and_run(config)}
        finally:
            if before is None:
                os.environ.pop(ALLOW_UNSANDBOXED_ENV, None)


def three_mocks(total: int = 40) -> dict[str, Any]:
    """Three mock models in every role at 40-80 ms, the medium shape's tasks, phases 3-5
    pipelined: every lane busy in every phase at once."""
    with tempfile.TemporaryDirectory(prefix="coeval-bench-est-") as tmp:
        work = Path(tmp)
        raw = medium_shape("mock", {"latency_ms": [40, 80]}, storage=work / "runs",
                           experiment_id="bench-estimate-three", total=total)
        raw["models"] = raw["models"][:3]
        config = write_yaml(work / "exp.yaml", raw)
        return {"shape": f"three mocks at 40-80 ms, {total} datapoints per (task, teacher), pipelined",
                **_estimate_and_run(config)}


def run(only: list[str] | None = None, total: int | None = None, repeat: int = 1) -> dict[str, Any]:
    """``nox -s bench``'s "estimates" figure: each shape's estimate against its run, each
    run ``repeat`` times (``total``: datapoints per teacher of the medium shapes, for a
    quick check)."""
    shapes: dict[str, Callable[[], dict[str, Any]]] = {
        "mock": lambda: mock(total), "fake_server": lambda: fake_server(total), "after_a_run": after_a_run,
        "code_task": code_task, "three_mocks": lambda: three_mocks(total or 40)}  # fmt: skip
    rows: dict[str, dict[str, Any]] = {}
    for name in only or SHAPES:
        tries = [shapes[name]() for _ in range(max(1, repeat))]
        row = dict(tries[0])
        row["ratios"] = [t["ratio"] for t in tries]
        row["estimated_and_actual_s"] = [(t["estimated_s"], t["actual_s"]) for t in tries]
        row["machine_at_estimates"] = [t["machine_at_estimate"] for t in tries]
        row["in_ranges"] = [t["in_range"] for t in tries]
        row["ok"] = all(t["ok"] for t in tries)
        rows[name] = row
    return {"name": "estimates", "shapes": rows, "target": "estimate within +-30% of the wall time",
            "ok": all(r["ok"] for r in rows.values())}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", default=",".join(SHAPES), help=f"comma-separated subset of {', '.join(SHAPES)}")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each shape (timing varies on a busy machine)")
    args = parser.parse_args()
    print(json.dumps(run([s for s in args.only.split(",") if s], repeat=args.repeat), indent=1))


if __name__ == "__main__":
    main()
