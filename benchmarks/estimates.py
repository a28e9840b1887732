"""How close the time estimate comes to the run: three shapes, each estimated as ``coeval
plan`` does, then run, wall time against estimate. The mock and the local model are
estimated with ``--estimate-samples 0`` (no call); the fake server with plan's sample
calls, which measure its latency as they would a provider's.

* **mock**: the medium shape (12,400 calls) on ``interface: mock`` with a 200 ms latency;
* **fake server**: the medium shape through ``interface: openai`` (the real SDK) against the
  loopback fake server at 200 ms, interface defaults (the adaptive limiter decides);
* **SmolLM2 quick start**: ``examples/quickstart.yaml``, llama.cpp on the CPU.

The target: each within +-30% of the run's wall time (estimate / actual in [0.77, 1.3]).

    python -m benchmarks.estimates                 # all three
    python -m benchmarks.estimates --only mock
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from benchmarks._common import REPO, fake_server_process, medium_shape, openai_keys, write_yaml

#: estimate / actual within this band (+-30% of the actual time)
TARGET_LOW, TARGET_HIGH = 1 / 1.3, 1.3
SHAPES = ("mock", "fake_server", "quickstart")
#: sample calls per model and phase for the fake server (``coeval plan``'s default is 2)
FAKE_SERVER_SAMPLES = 2


def _estimate_and_run(config_path: Path, keys_file: Path | None, samples: int = 0) -> dict[str, Any]:
    from coeval.config import load_config
    from coeval.console.progress import ProgressReporter
    from coeval.contract.manager import registries
    from coeval.planning.cost import estimate_cost
    from coeval.run.options import RunOptions
    from coeval.run.runner import arun_experiment

    keys = str(keys_file) if keys_file else None
    config = load_config(config_path, keys_file=keys)
    registries()
    estimate = estimate_cost(config, samples=samples, keys_file=keys)

    progress = ProgressReporter(enabled=False, summary=False)
    started, cpu0 = time.perf_counter(), time.process_time()
    result = asyncio.run(arun_experiment(config, RunOptions(keys_file=keys, progress=False), progress=progress))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu0
    if result.exit_code != 0:
        raise RuntimeError(f"the benchmark run ended with exit code {result.exit_code}: {result.message}")
    actual = {t.phase_id: round(t.elapsed, 2) for t in progress.trackers}
    ratio = estimate.seconds / wall if wall else float("nan")
    return {
        "calls": estimate.total_calls,
        "estimated_s": round(estimate.seconds, 1),
        "actual_s": round(wall, 1),
        "ratio": round(ratio, 3),
        "cpu_ms_per_call": round(cpu * 1000 / estimate.total_calls, 3) if estimate.total_calls else None,
        "phases_estimated_s": {p: round(s, 1) for p, s in estimate.phase_seconds.items() if s},
        "phases_actual_s": actual,
        "ok": TARGET_LOW <= ratio <= TARGET_HIGH,
    }


def mock(total: int | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="coeval-bench-est-") as tmp:
        work = Path(tmp)
        config = write_yaml(work / "exp.yaml", medium_shape("mock", {"latency_ms": 200}, storage=work / "runs",
                                                             experiment_id="bench-estimate-mock", total=total))
        return {"shape": "mock, medium shape, 200 ms", **_estimate_and_run(config, None)}


def fake_server() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="coeval-bench-est-") as tmp:
        work = Path(tmp)
        with fake_server_process(200) as server:
            params = {"base_url": f"{server.url}/v1", "timeout": 60}
            config = write_yaml(work / "exp.yaml", medium_shape("openai", params, storage=work / "runs",
                                                                 experiment_id="bench-estimate-fake"))
            # the latency comes from plan's sample calls (free here: the server is local)
            return {"shape": "openai SDK, fake server, medium shape, 200 ms",
                    **_estimate_and_run(config, openai_keys(work), samples=FAKE_SERVER_SAMPLES)}


def quickstart() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="coeval-bench-est-") as tmp:
        work = Path(tmp)
        raw = yaml.safe_load((REPO / "examples" / "quickstart.yaml").read_text(encoding="utf-8"))
        raw["experiment"] = {**raw["experiment"], "storage_folder": str(work / "runs")}
        config = write_yaml(work / "exp.yaml", raw)
        return {"shape": "SmolLM2 quick start (llama.cpp, CPU)", **_estimate_and_run(config, None)}


def run(only: list[str] | None = None, total: int | None = None) -> dict[str, Any]:
    """``nox -s bench``'s "estimates" figure: each shape's estimate against its run
    (``total``: datapoints per teacher of the mock shape, for a quick check)."""
    shapes = {"mock": lambda: mock(total), "fake_server": fake_server, "quickstart": quickstart}
    rows = {name: shapes[name]() for name in (only or SHAPES)}
    return {"name": "estimates", "shapes": rows, "target": "estimate within +-30% of the wall time",
            "ok": all(r["ok"] for r in rows.values())}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", default=",".join(SHAPES), help=f"comma-separated subset of {', '.join(SHAPES)}")
    args = parser.parse_args()
    print(json.dumps(run([s for s in args.only.split(",") if s]), indent=1))


if __name__ == "__main__":
    main()
