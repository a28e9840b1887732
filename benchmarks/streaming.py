"""Streaming: a phase of millions of items starts at once, in flat memory, and stops on SIGTERM.

The scheduler runs ``items`` judge-sized work items (each with a rendered prompt of about
1 KB, built only when a lane needs it, as the phases' ``LazyItems`` do) on the ``mock``
interface with no latency, for ``run_s`` seconds; then the process sends itself SIGTERM,
handled as ``coeval run`` handles it (the first signal stops starting calls). Figures: the
time from the phase's start to its first call, peak memory, calls per second, and the time
from the signal to the phase's end. This measures the scheduler's streaming; the phases'
own planning before they submit (reading the run folder, listing what is owed) is not in it.

    python -m benchmarks.streaming
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import sys
import time
from pathlib import Path
from typing import Any

TARGET_FIRST_CALL_S = 1.0
TARGET_PEAK_MB = 1024.0
TARGET_STOP_S = 2.0

_FILLER = "Rate the answer on each criterion below as High, Medium or Low. " * 16


def run(items: int = 2_000_000, run_s: float = 10.0) -> dict[str, Any]:
    from coeval.config.model import ModelConfig
    from coeval.interfaces.base import GenerateRequest
    from coeval.interfaces.mock import MockInterface
    from coeval.phases._items import LazyItems
    from coeval.run.signals import Interrupts, handle_signals, stop_gracefully
    from coeval.scheduler import Scheduler, WorkItem, WorkOutcome

    model = ModelConfig(name="judge", interface="mock", roles=("judge",), parameters={"latency_ms": 0})
    iface = MockInterface(model)
    done = [0]
    first_call: list[float] = []

    def on_done(outcome: WorkOutcome) -> None:
        done[0] += 1

    def build(i: int) -> WorkItem:
        if not first_call and done[0]:
            first_call.append(time.perf_counter())
        return WorkItem(key=f"judge:{i}", phase="evaluation", model=model, on_done=on_done,
                        request=GenerateRequest(prompt=f"item {i}\n{_FILLER}", params=model.parameters, role="judge"))

    async def go() -> dict[str, Any]:
        scheduler = Scheduler({"judge": iface})
        loop = asyncio.get_running_loop()
        interrupts = Interrupts(None)
        interrupts.on_first = lambda: stop_gracefully(scheduler)
        signalled: list[float] = []

        def terminate() -> None:
            signalled.append(time.perf_counter())
            os.kill(os.getpid(), signal.SIGTERM)

        loop.call_later(run_s, terminate)
        with handle_signals(loop, interrupts):
            started = time.perf_counter()
            stats = await scheduler.run("evaluation", LazyItems(range(items), build))
            ended = time.perf_counter()
        return {"started": started, "ended": ended, "signalled": signalled[0] if signalled else None, "stats": stats}

    saved = sys.stderr
    sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - restored in finally; the "stopping after the calls in flight" line
    try:
        out = asyncio.run(go())
    finally:
        sys.stderr.close()
        sys.stderr = saved
    stats = out["stats"]
    usage = resource.getrusage(resource.RUSAGE_SELF)
    peak_mb = usage.ru_maxrss / 1024.0
    first = (first_call[0] - out["started"]) if first_call else None
    stop_s = (out["ended"] - out["signalled"]) if out["signalled"] else None
    calls = stats.phase_calls
    busy = (out["signalled"] or out["ended"]) - out["started"]
    return {
        "name": "streaming", "items": items, "calls": calls, "first_call_s": round(first, 3) if first else None,
        "calls_per_s": round(calls / busy, 1) if busy > 0 else None, "peak_mb": round(peak_mb, 1),
        "stop_after_signal_s": round(stop_s, 3) if stop_s is not None else None, "unstarted": stats.unstarted,
        "target_first_call_s": TARGET_FIRST_CALL_S, "target_peak_mb": TARGET_PEAK_MB, "target_stop_s": TARGET_STOP_S,
        "ok": first is not None and first <= TARGET_FIRST_CALL_S and peak_mb < TARGET_PEAK_MB
        and stop_s is not None and stop_s <= TARGET_STOP_S,
    }




# ---------------------------------------------------------------------------------------------
# The same through a whole phase: ``coeval run --continue`` of phase 5 on the mock.

#: datapoints per (task, teacher) of the medium shape (5 teachers, 5 students, 5 judges, 4
#: tasks): 4,000 make 80,000 datapoints, 400,000 responses and 2,000,000 judgments.
PHASE_DATAPOINTS = 4000
_PHASE_CACHE_VERSION = 1


def build_phase_run(datapoints: int) -> tuple[Path, Path, float]:
    """(config, run folder, seconds spent building; 0 when cached): the medium shape with
    phases 1-4 done and phase 5 still to run (its 5 * responses judgments owed), cached."""
    import shutil

    from benchmarks import resume
    from benchmarks._common import CACHE

    if datapoints % resume._SEED_TOTAL:
        raise ValueError(f"datapoints must be a multiple of {resume._SEED_TOTAL}")
    root = CACHE / f"streaming-phase-{datapoints}-v{_PHASE_CACHE_VERSION}"
    run_dir = root / "runs" / "resume"
    if (root / ".complete").exists():
        return root / "exp.yaml", run_dir, 0.0
    if root.exists():
        shutil.rmtree(root)
    started = time.perf_counter()
    root.mkdir(parents=True)
    resume._seed_run(root)
    shutil.rmtree(run_dir / "phase5_evaluations")
    (run_dir / "phase5_evaluations").mkdir()
    copies = datapoints // resume._SEED_TOTAL
    for phase in ("phase3_datapoints", "phase4_responses"):
        for path in sorted((run_dir / phase).glob("*.jsonl")):
            resume._replicate(path, copies)
    resume._config(root, datapoints)
    (root / ".complete").write_text("ok\n", encoding="utf-8")
    return root / "exp.yaml", run_dir, time.perf_counter() - started


def phase(datapoints: int = PHASE_DATAPOINTS, run_s: float = 5.0) -> dict[str, Any]:
    """In a fresh process: ``coeval run --continue`` with phase 5 owed; SIGTERM ``run_s``
    seconds after its first judge call. Figures: phase 5's start (entering the phase, before
    it reads its records) to its first call, the process's start to that call, peak memory
    of the whole process, and the time from the signal to the run's end."""
    config, run_dir, setup = build_phase_run(datapoints)
    from benchmarks._common import run_child

    for path in (run_dir / "phase5_evaluations").glob("*.jsonl"):  # what an earlier measurement wrote
        path.unlink()

    out = run_child("streaming:_phase_child", {"config": str(config), "run_s": run_s}, timeout=900)
    return {**out, "datapoints_per_teacher": datapoints, "setup_s": round(setup, 1)}


def _phase_child(config: str, run_s: float) -> dict[str, Any]:
    started = time.perf_counter()
    from coeval.interfaces.base import GenerateRequest, GenerateResult
    from coeval.interfaces.mock import MockInterface
    from coeval.phases.evaluation import EvaluationPhase
    from coeval.phases.responses import usable_datapoints  # noqa: F401  (imported before timing)
    from coeval.plugins.config_loading import load_config
    from coeval.run.options import RunOptions
    from coeval.run.runner import run_experiment

    marks: dict[str, float] = {}
    calls = [0]
    phase_run = EvaluationPhase.run

    async def timed_run(self: EvaluationPhase, ctx: Any) -> None:
        marks.setdefault("phase_start", time.perf_counter())
        await phase_run(self, ctx)

    generate = MockInterface.generate

    async def noting(self: MockInterface, request: GenerateRequest) -> GenerateResult:
        if request.role == "judge":
            calls[0] += 1
            if "first_call" not in marks:
                marks["first_call"] = time.perf_counter()
                asyncio.get_running_loop().call_later(run_s, _terminate, marks)
        return await generate(self, request)

    EvaluationPhase.run = timed_run  # type: ignore[method-assign]
    MockInterface.generate = noting  # type: ignore[method-assign]
    cfg = load_config(config, check_filesystem=False)
    judgments = sum(1 for p in (Path(config).parent / "runs" / "resume" / "phase4_responses").glob("*.jsonl")
                    for _ in p.open("rb")) * len([m for m in cfg.models if "judge" in m.roles])
    saved = sys.stderr
    sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - restored in finally
    try:
        result = run_experiment(cfg, RunOptions(continue_run=True, progress=False))
    finally:
        sys.stderr.close()
        sys.stderr = saved
    ended = time.perf_counter()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    first = marks.get("first_call")
    phase_start = marks.get("phase_start")
    first_s = first - phase_start if first is not None and phase_start is not None else None
    stop_s = ended - marks["signalled"] if "signalled" in marks else None
    return {
        "name": "streaming_phase", "judgments": judgments, "exit_code": result.exit_code, "judge_calls": calls[0],
        "first_call_after_phase_start_s": round(first_s, 3) if first_s is not None else None,
        "first_call_after_process_start_s": round(first - started, 2) if first is not None else None,
        "peak_mb": round(peak_mb, 1), "stop_after_signal_s": round(stop_s, 3) if stop_s is not None else None,
        "target_first_call_s": TARGET_FIRST_CALL_S, "target_peak_mb": TARGET_PEAK_MB, "target_stop_s": TARGET_STOP_S,
        "ok": first_s is not None and first_s <= TARGET_FIRST_CALL_S and peak_mb < TARGET_PEAK_MB
        and stop_s is not None and stop_s <= TARGET_STOP_S,
    }


def _terminate(marks: dict[str, float]) -> None:
    marks["signalled"] = time.perf_counter()
    os.kill(os.getpid(), signal.SIGTERM)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phase", action="store_true", help="through phase 5 of `coeval run` instead")
    parser.add_argument("--datapoints", type=int, default=PHASE_DATAPOINTS,
                        help="--phase: datapoints per (task, teacher); judgments = 500 x this")
    args = parser.parse_args()
    print(json.dumps(phase(args.datapoints) if args.phase else run(), indent=2))
