"""The orchestrator's ceiling: how many calls a second one ``coeval run`` process makes, at
what CPU per call and peak memory, when the models answer at once.

The medium shape (5 models in every role, 4 tasks) scaled to ``calls`` (datapoints per
teacher = calls / 620; 1,000,000 calls: 1,613 per teacher), at zero latency:

* **mock**: ``interface: mock``, every model its own lane;
* **sdk**: ``interface: openai`` (the real SDK, aiohttp transport) against the loopback fake
  server, one lane at up to 512 calls in flight.

    python -m benchmarks.ceiling --calls 1000000 --interface mock
    python -m benchmarks.ceiling --calls 100000 --interface sdk
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
from pathlib import Path
from typing import Any

from benchmarks._common import fake_server_process, medium_shape, openai_keys, write_yaml
from benchmarks.pipeline import _phases, _proc_cpu_seconds, _run

#: calls of the medium shape per datapoint of each teacher (20 per teacher: 12,400 calls)
CALLS_PER_DATAPOINT = 620


def ceiling(calls: int = 1_000_000, interface: str = "mock") -> dict[str, Any]:
    total = max(1, round(calls / CALLS_PER_DATAPOINT))
    with tempfile.TemporaryDirectory(prefix="coeval-bench-ceiling-") as tmp:
        work = Path(tmp)
        if interface == "mock":
            config = write_yaml(work / "exp.yaml", medium_shape("mock", {"latency_ms": 0}, storage=work / "runs",
                                                                 experiment_id="bench-ceiling", total=total))
            _, progress, wall, cpu = _run(config, None)
            server_cpu = None
        else:
            with fake_server_process(0) as server:
                params = {"base_url": f"{server.url}/v1", "timeout": 60, "self_hosted": False}
                config = write_yaml(work / "exp.yaml", medium_shape("openai", params, storage=work / "runs",
                                                                     experiment_id="bench-ceiling", total=total))
                server_cpu0 = _proc_cpu_seconds(server.pid)
                _, progress, wall, cpu = _run(config, openai_keys(work))
                server_cpu1 = _proc_cpu_seconds(server.pid)
                server_cpu = server_cpu1 - server_cpu0 if server_cpu0 is not None and server_cpu1 is not None else None
    phases, made = _phases(progress, 0.0, 0)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    out = {
        "name": "ceiling",
        "interface": interface,
        "calls": made,
        "wall_s": round(wall, 1),
        "calls_per_s": round(made / wall, 1) if wall else None,
        "cpu_ms_per_call": round(cpu * 1000 / made, 4) if made else None,
        "peak_mb": round(peak_mb, 1),
        "phases": [{k: v for k, v in p.items() if k in ("phase", "calls", "wall_s")} for p in phases],
    }
    if server_cpu is not None and made:
        out["server_cpu_ms_per_call"] = round(server_cpu * 1000 / made, 4)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--interface", choices=("mock", "sdk"), default="mock")
    args = parser.parse_args()
    print(json.dumps(ceiling(args.calls, args.interface), indent=1))


if __name__ == "__main__":
    main()
