"""The pipeline end to end: throughput against the fake provider server, and our overhead.

*throughput*: the medium shape (12,400 calls) through the ``openai`` interface -- the real
``openai`` SDK over HTTP -- against ``coeval_testing.fake_server`` started as a separate
process with 200 ms latency per call. All five models share one API key, so one
connection with a concurrency limit of ``concurrency`` (64: a typical provider limit)
carries every call; the ideal time of a phase is ``calls x latency / concurrency``, and
efficiency is ideal / wall. CPU is this (client) process's own; the server's is reported
beside it.

*overhead*: the same shape on the ``mock`` interface with no latency, so every CPU
millisecond is CoEval's own (phases, scheduler, records, the mock's answers).

    python -m benchmarks.pipeline throughput
    python -m benchmarks.pipeline overhead
"""

from __future__ import annotations

import asyncio
import heapq
import importlib
import math
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import fake_server_process, medium_shape, openai_keys, write_yaml

TARGET_THROUGHPUT_S = 60.0
TARGET_OVERHEAD_MS = 0.3
#: The same run with the interface's default limits: the adaptive limiter must not hold it back.
TARGET_LIMITER_S = 25.0
PLANNED_CALLS = 12_400


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _proc_cpu_seconds(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


#: interface -> the SDK module its first call imports
SDK_MODULES = {"openai": "openai", "vllm": "openai"}


def _import_sdks(config: Any) -> None:
    """Import the provider SDKs the run calls before the clock starts, as plugin discovery
    is: a one-time cost per process (about 0.9 s for ``openai``), not a per-call one, that
    would otherwise read as a second of idle slots at the start of every figure."""
    for interface in {m.interface for m in config.models}:
        if interface in SDK_MODULES:
            importlib.import_module(SDK_MODULES[interface])


def _run(config_path: Path, keys_file: Path | None, *, pipeline: bool = False) -> tuple[Any, Any, float, float]:
    """Run the experiment in this process; (result, progress, wall s, cpu s)."""
    from coeval.console.progress import ProgressReporter
    from coeval.plugins.config_loading import load_config
    from coeval.plugins.manager import registries
    from coeval.run.options import RunOptions
    from coeval.run.runner import arun_experiment

    keys = str(keys_file) if keys_file else None
    config = load_config(config_path, keys_file=keys)
    registries()  # plugin discovery and imports: once per process, not a per-call cost
    _import_sdks(config)
    progress = ProgressReporter(enabled=False, summary=False)
    options = RunOptions(keys_file=keys, progress=False, pipeline=pipeline)
    cpu0, wall0 = _cpu_seconds(), time.perf_counter()
    result = asyncio.run(arun_experiment(config, options, progress=progress))
    wall, cpu = time.perf_counter() - wall0, _cpu_seconds() - cpu0
    if result.exit_code != 0:
        raise RuntimeError(f"the benchmark run ended with exit code {result.exit_code}: {result.message}")
    return result, progress, wall, cpu


def _phases(progress: Any, latency_s: float, concurrency: int) -> tuple[list[dict[str, Any]], int]:
    rows, calls = [], 0
    for t in progress.trackers:
        phase_calls = t.ok + t.failed + t.retries
        calls += phase_calls
        ideal = phase_calls * latency_s / concurrency if concurrency else 0.0
        rows.append({
            "phase": t.phase_id,
            "calls": phase_calls,
            "wall_s": round(t.elapsed, 2),
            "ideal_s": round(ideal, 2),
            "efficiency": round(ideal / t.elapsed, 3) if t.elapsed > 0 and ideal else None,
        })
    return rows, calls


def _peak_in_flight(run_root: Path) -> int:
    """The most calls any lane of the run had in flight (from ``lanes.json``)."""
    from coeval.run.lane_figures import read_lanes

    phases = read_lanes(run_root)["phases"].values()
    return max((int(row.get("peak_in_flight") or 0) for p in phases for row in p.get("lanes", [])), default=0)


def throughput(latency_ms: float = 200.0, concurrency: int | None = 64, total: int | None = None,
               target_s: float = TARGET_THROUGHPUT_S, latency_sigma: float = 0.0,
               pipeline: bool = False, self_hosted: bool | None = None) -> dict[str, Any]:
    """Figure (a), and with ``concurrency=None`` the limiter figure: the interface's default
    settings (no concurrency, no ``self_hosted``), so the adaptive limiter alone decides how
    many calls are in flight against the loopback server. Starts the fake server, runs the
    medium shape against it. With ``latency_sigma``, latencies are lognormal with median
    ``latency_ms`` (the ideal then uses their mean); ``pipeline`` runs phases 3-5 at once;
    ``self_hosted`` sets the parameter (None: the interface decides from the URL)."""
    mean_ms = mean_latency_ms(latency_ms, latency_sigma)
    with tempfile.TemporaryDirectory(prefix="coeval-bench-tp-") as tmp:
        work = Path(tmp)
        with fake_server_process(latency_ms, latency_sigma) as server:
            keys = openai_keys(work)
            params: dict[str, Any] = {"base_url": f"{server.url}/v1", "timeout": 60}
            if concurrency is not None:
                params.update(concurrency=concurrency, max_concurrency=concurrency)
            if self_hosted is not None:
                params["self_hosted"] = self_hosted
            config = write_yaml(work / "exp.yaml", medium_shape("openai", params, storage=work / "runs",
                                                                 experiment_id="bench-throughput", total=total))
            server_cpu0 = _proc_cpu_seconds(server.pid)
            _, progress, wall, cpu = _run(config, keys, pipeline=pipeline)
            server_cpu1 = _proc_cpu_seconds(server.pid)
            peak = _peak_in_flight(work / "runs" / "bench-throughput")
    phases, calls = _phases(progress, mean_ms / 1000.0, concurrency or 64)
    ideal = sum(p["ideal_s"] for p in phases)
    server_ms = None
    if server_cpu0 is not None and server_cpu1 is not None and calls:
        server_ms = round((server_cpu1 - server_cpu0) * 1000 / calls, 3)
    return {
        "name": "pipeline_throughput",
        "calls": calls,
        "latency_ms": latency_ms,
        **({"latency_sigma": latency_sigma, "mean_latency_ms": round(mean_ms, 1)} if latency_sigma else {}),
        "pipeline": pipeline,
        "concurrency": concurrency if concurrency is not None else "adaptive (interface defaults)",
        "peak_in_flight": peak,
        "wall_s": round(wall, 2),
        "wall_excludes": "config loading, plugin discovery and the SDK's import (done once before the clock starts)",
        "ideal_s": round(ideal, 2),
        "efficiency": round(ideal / wall, 3) if wall else None,
        "calls_per_s": round(calls / wall, 1) if wall else None,
        "client_cpu_ms_per_call": round(cpu * 1000 / calls, 3) if calls else None,
        "server_cpu_ms_per_call": server_ms,
        "phases": phases,
        "target_s": target_s,
        "ok": wall <= target_s and calls >= (PLANNED_CALLS if total is None else 0),
    }


def perfect_makespan(latencies_s: list[float], concurrency: int) -> float:
    """The wall time of a perfect orchestrator: every call ready at once (phases fully
    overlapped), no client time between calls, each freed slot taking the next call at
    once. Under heavy-tailed latency even it falls short of ``calls x mean / concurrency``:
    the last calls' tail leaves slots idle."""
    slots = [0.0] * max(1, concurrency)
    for latency in latencies_s:
        heapq.heappush(slots, heapq.heappop(slots) + latency)
    return max(slots)


def perfect_efficiency(calls: int, latency_ms: float, latency_sigma: float, concurrency: int) -> float:
    """Ideal / :func:`perfect_makespan` on the fake server's own latency draws (request
    indexes ``0..calls-1``): the most any client can reach on figure a2's latencies."""
    from coeval_testing.fake_server._core import lognormal_ms

    draws = [lognormal_ms(latency_ms, latency_sigma, i) / 1000.0 for i in range(calls)]
    return ideal_s(calls, latency_ms, latency_sigma, concurrency) / perfect_makespan(draws, concurrency)


def mean_latency_ms(latency_ms: float, latency_sigma: float) -> float:
    """Mean of the fake server's latency: ``latency_ms``, the median of a lognormal of shape
    ``latency_sigma`` (0: fixed)."""
    return latency_ms * math.exp(latency_sigma**2 / 2)


def ideal_s(calls: int, latency_ms: float, latency_sigma: float, concurrency: int) -> float:
    """``calls x mean latency / concurrency``: the wall of calls that keep every slot busy."""
    return calls * mean_latency_ms(latency_ms, latency_sigma) / 1000.0 / concurrency


#: The mock's own CPU per call (its answers, schema instances and usage), within figure b.
TARGET_MOCK_MS = 0.2


class _MockCpu:
    """Times the mock's ``generate`` in this thread's CPU: at zero latency it never awaits,
    so the difference around each call is the mock's own work, not the run's."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0

    def __enter__(self) -> _MockCpu:
        from coeval.interfaces.mock import MockInterface

        self._cls, self._generate = MockInterface, MockInterface.generate
        generate, tally = self._generate, self

        async def timed(iface: Any, request: Any) -> Any:
            started = time.thread_time()
            try:
                return await generate(iface, request)
            finally:
                tally.seconds += time.thread_time() - started
                tally.calls += 1

        MockInterface.generate = timed  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        self._cls.generate = self._generate  # type: ignore[method-assign]


def overhead(total: int | None = None) -> dict[str, Any]:
    """Figure (b). The medium shape on the zero-latency mock: CoEval's own CPU per call, and
    of it the mock's own answers."""
    with tempfile.TemporaryDirectory(prefix="coeval-bench-oh-") as tmp:
        work = Path(tmp)
        config = write_yaml(work / "exp.yaml", medium_shape("mock", {"latency_ms": 0}, storage=work / "runs",
                                                             experiment_id="bench-overhead", total=total))
        with _MockCpu() as mock:
            _, progress, wall, cpu = _run(config, None)
    phases, calls = _phases(progress, 0.0, 0)
    per_call = cpu * 1000 / calls if calls else float("nan")
    mock_ms = mock.seconds * 1000 / mock.calls if mock.calls else float("nan")
    return {
        "name": "orchestration_overhead",
        "calls": calls,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "cpu_ms_per_call": round(per_call, 4),
        "mock_cpu_ms_per_call": round(mock_ms, 4),
        "phases": [{k: v for k, v in p.items() if k in ("phase", "calls", "wall_s")} for p in phases],
        "target_ms_per_call": TARGET_OVERHEAD_MS,
        "target_mock_ms_per_call": TARGET_MOCK_MS,
        "ok": per_call <= TARGET_OVERHEAD_MS and mock_ms <= TARGET_MOCK_MS
              and calls >= (PLANNED_CALLS if total is None else 0),
    }


def main(argv: list[str]) -> int:
    import json

    which = argv[0] if argv else "overhead"
    result = throughput() if which == "throughput" else overhead()
    print(json.dumps(result, indent=2))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
