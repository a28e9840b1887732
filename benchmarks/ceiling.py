"""The orchestrator's ceiling: how many calls a second one ``coeval run`` process makes, at
what CPU per call and peak memory, when the models answer at once.

The medium shape (5 models in every role, 4 tasks) scaled to ``calls`` (datapoints per
teacher = calls / 620; 1,000,000 calls: 1,613 per teacher), at zero latency:

* **mock**: ``interface: mock``, every model its own lane;
* **sdk**: ``interface: openai`` (the real SDK, aiohttp transport) against the loopback fake
  server, one lane at up to 512 calls in flight;
* **sdk-floor**: the SDK alone, without CoEval: the client the ``openai`` interface builds
  (same transport, limits, retries off) posting the body it builds for a judge-sized
  prompt, 512 at a time, to the same server. The sdk path's CPU per call less this floor is
  what CoEval adds to each call (scheduling, prompts, parsing, records).

:func:`sdk_pool` sends figure a2's calls (``benchmarks.run``) the same bare way, at its
latency and concurrency: the efficiency the SDK and the machine leave for any orchestrator.

    python -m benchmarks.ceiling --calls 1000000 --interface mock
    python -m benchmarks.ceiling --calls 100000 --interface sdk
    python -m benchmarks.ceiling --calls 50000 --interface sdk-floor
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import fake_server_process, medium_shape, openai_keys, write_yaml
from benchmarks.pipeline import _cpu_seconds, _phases, _proc_cpu_seconds, _run, ideal_s

#: calls of the medium shape per datapoint of each teacher (20 per teacher: 12,400 calls)
CALLS_PER_DATAPOINT = 620
#: calls in flight on the SDK paths (the interface's own bound)
SDK_IN_FLIGHT = 512
#: the floor's prompt: about the length of the medium shape's judge prompts
FLOOR_PROMPT = "Grade the answer below against each criterion of the rubric. " * 24
FLOOR_SCHEMA = {"type": "object", "properties": {"score": {"type": "string", "enum": ["High", "Medium", "Low"]}},
                "required": ["score"]}  # fmt: skip


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


def sdk_floor(calls: int = 50_000) -> dict[str, Any]:
    """The SDK's own CPU per call: ``calls`` posts of one judge-sized body through the client
    the ``openai`` interface builds, :data:`SDK_IN_FLIGHT` at a time, each reply decoded as
    the interface decodes it, with nothing of CoEval around them but the garbage collector's
    setting a run uses (:mod:`coeval.run.collector`), so that the difference is CoEval's code."""
    with tempfile.TemporaryDirectory(prefix="coeval-bench-floor-") as tmp, fake_server_process(0) as server:
        iface, body = _bare_interface(Path(tmp), server.url)
        server_cpu0 = _proc_cpu_seconds(server.pid)
        cpu, wall = _bare_posts(iface, body, calls, SDK_IN_FLIGHT)
        server_cpu1 = _proc_cpu_seconds(server.pid)
    out: dict[str, Any] = {"name": "ceiling", "interface": "sdk-floor", "calls": calls, "wall_s": round(wall, 1),
                           "calls_per_s": round(calls / wall, 1), "cpu_ms_per_call": round(cpu * 1000 / calls, 4),
                           "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)}  # fmt: skip
    if server_cpu0 is not None and server_cpu1 is not None:
        out["server_cpu_ms_per_call"] = round((server_cpu1 - server_cpu0) * 1000 / calls, 4)
    return out


def sdk_pool(calls: int, latency_ms: float = 200.0, latency_sigma: float = 1.0, concurrency: int = 64) -> dict[str, Any]:
    """Figure a2's calls without CoEval: ``calls`` posts through the SDK client the ``openai``
    interface builds, ``concurrency`` workers each taking the next one as soon as its last
    returns, to the fake server at figure a2's latency. The server draws each request's
    latency by its index, so these are the run's very draws; the wall against the same
    ideal (``calls x mean latency / concurrency``) is the most the SDK and this machine allow
    a run with a perfect worker pool and nothing else to do; its CPU per call is the SDK's own
    at that latency, against which the run's is measured (figure a2's targets)."""
    with tempfile.TemporaryDirectory(prefix="coeval-bench-pool-") as tmp, \
            fake_server_process(latency_ms, latency_sigma) as server:  # fmt: skip
        iface, body = _bare_interface(Path(tmp), server.url)
        cpu, wall = _bare_posts(iface, body, calls, concurrency, warm_up=False)
    ideal = ideal_s(calls, latency_ms, latency_sigma, concurrency)
    return {"name": "sdk_pool", "calls": calls, "concurrency": concurrency, "wall_s": round(wall, 2),
            "ideal_s": round(ideal, 2), "efficiency": round(ideal / wall, 3),
            "cpu_ms_per_call": round(cpu * 1000 / calls, 4)}  # fmt: skip


def _bare_interface(work: Path, server_url: str) -> tuple[Any, dict[str, Any]]:
    """The ``openai`` interface of the medium shape's first model, pointed at the fake
    server, and the body it builds for a judge-sized prompt with a schema."""
    from coeval.config.credentials import KeyStore
    from coeval.interfaces.base import GenerateRequest
    from coeval.plugins.config_loading import load_config
    from coeval.plugins.manager import registries

    params = {"base_url": f"{server_url}/v1", "timeout": 60, "self_hosted": False}
    keys = openai_keys(work)
    config = load_config(write_yaml(work / "exp.yaml", medium_shape(
        "openai", params, storage=work / "runs", experiment_id="bench-bare", total=1)), keys_file=str(keys))
    model = config.models[0]
    iface: Any = registries().interfaces.get(model.interface)(model, KeyStore.load(keys).for_provider(
        model.interface, model.access_key))  # fmt: skip
    body = iface.build_body(GenerateRequest(prompt=FLOOR_PROMPT, params=dict(model.parameters), role="judge",
                                            json_schema=FLOOR_SCHEMA, schema_name="grade"))  # fmt: skip
    return iface, body


def _bare_posts(iface: Any, body: dict[str, Any], calls: int, in_flight: int, *, warm_up: bool = True) -> tuple[float, float]:
    """(CPU s, wall s) of ``calls`` posts, ``in_flight`` workers pulling the next one, under
    the collector setting a run uses; ``warm_up``: a first post (connection, the client's
    lazy set-up) outside the count."""
    from coeval.run.collector import run_collector

    with run_collector():
        return asyncio.run(_post_many(iface, body, calls, in_flight, warm_up))


async def _post_many(iface: Any, body: dict[str, Any], calls: int, in_flight: int, warm_up: bool) -> tuple[float, float]:
    client = iface.client()

    async def post() -> None:
        json.loads(await client.post(iface.chat_path, body=body, cast_to=bytes))

    if warm_up:
        await post()
    left = calls

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            await post()

    cpu0, wall0 = _cpu_seconds(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(in_flight)))
    cpu, wall = _cpu_seconds() - cpu0, time.perf_counter() - wall0
    await iface.aclose()
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--interface", choices=("mock", "sdk", "sdk-floor"), default="mock")
    args = parser.parse_args()
    result = sdk_floor(args.calls) if args.interface == "sdk-floor" else ceiling(args.calls, args.interface)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
