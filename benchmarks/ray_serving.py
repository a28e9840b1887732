"""Ray-served against in-process: the same local model, the same calls, on this machine's CPU.

The embedded SmolLM2 (llama.cpp, one thread, greedy) answers ``calls`` short prompts twice:

* in-process, through the ``llamacpp`` interface (the local-model host);
* through Ray Serve, on a local Ray cluster this benchmark starts: the model deployed as
  one replica with the same settings, every call going through CoEval's ``vllm`` client,
  Ray's HTTP proxy and the replica (:mod:`coeval_hf.cluster_served`).

Figures: calls/s and generated tokens/s each way, and the overhead Ray adds to one call
(median latency of one-token calls, one at a time, Ray minus in-process). The in-process
figures are the mean of a run before and one after the Ray run. Both paths run
the same engine with one thread, so the throughput ratio shows the serving cost rather
than a difference in compute; the gain from Ray is more replicas on more machines, which
one shared machine cannot show.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from coeval.config.model import ModelConfig
from coeval.interfaces.base import GenerateRequest, Interface
from coeval_hf.cluster_served import ClusterServedInterface

PROMPTS = ("Name a planet.", "What is 2 + 2?", "Name a colour.", "Say hello.", "Name a fruit.", "What is ice?")


def _model(cluster: dict[str, Any] | None) -> ModelConfig:
    params: dict[str, Any] = {"model": "smollm2-135m", "threads": 1, "temperature": 0.0, "max_tokens": 24}
    if cluster is not None:
        params["cluster"] = cluster
    return ModelConfig(name="smol", interface="llamacpp", roles=("student",), parameters=params)


async def _throughput(iface: Interface, calls: int) -> dict[str, float]:
    requests = [GenerateRequest(prompt=PROMPTS[i % len(PROMPTS)], params=iface.model.parameters) for i in range(calls)]
    if isinstance(iface, ClusterServedInterface):
        await iface.serve()  # deploy and wait until ready before the clock starts
    await iface.generate(requests[0])  # the model loaded (in-process, or in the replica)
    started = time.perf_counter()
    results = await asyncio.gather(*(iface.generate(r) for r in requests))
    wall = time.perf_counter() - started
    tokens = sum(r.usage.output_tokens for r in results)
    return {"wall_s": round(wall, 2), "calls_per_s": round(calls / wall, 3), "tokens_per_s": round(tokens / wall, 1)}


async def _latency_ms(iface: Interface, calls: int) -> float:
    one_token = {**iface.model.parameters, "max_tokens": 1}
    times = []
    for i in range(calls):
        started = time.perf_counter()
        await iface.generate(GenerateRequest(prompt=PROMPTS[i % len(PROMPTS)], params=one_token))
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


async def _measure(iface: Interface, calls: int, latency_calls: int) -> dict[str, float]:
    try:
        figures = await _throughput(iface, calls)
        figures["one_token_ms"] = round(await _latency_ms(iface, latency_calls), 1)
        return figures
    finally:
        await iface.aclose()


def run(calls: int = 24, latency_calls: int = 15) -> dict[str, Any]:
    import ray
    from coeval_hf.cluster_served import cluster_aware
    from coeval_hf.llamacpp import LlamaCppInterface

    build = cluster_aware(LlamaCppInterface)
    from coeval_hf._host import get_host

    local_before = local = asyncio.run(_measure(build(_model(None)), calls, latency_calls))

    get_host().unload_all()
    temp = Path(tempfile.mkdtemp(prefix="coeval-bench-ray-"))
    started = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=str(temp), log_to_driver=False, configure_logging=False)
    os.environ.setdefault("COEVAL_SERVE_PORT", "8765")
    try:
        served = build(_model({"replicas": 1, "num_cpus": 1}))
        deploy_started = time.perf_counter()
        on_ray = asyncio.run(_measure(served, calls, latency_calls))
        on_ray["cluster_start_s"] = round(deploy_started - started, 1)
    finally:
        from ray import serve

        stop_serve: Any = serve.shutdown  # untyped in Ray
        stop_serve()
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
    # in-process again, after Ray: on a shared machine the load moves between the two
    local_after = asyncio.run(_measure(build(_model(None)), calls, latency_calls))
    get_host().unload_all()
    local = {key: round((local[key] + local_after[key]) / 2, 3) for key in local}
    local["calls_per_s_runs"] = [local_before["calls_per_s"], local_after["calls_per_s"]]  # type: ignore[assignment]
    return {
        "name": "ray",
        "calls": calls,
        "in_process": local,
        "ray_served": on_ray,
        "throughput_ratio": round(on_ray["calls_per_s"] / local["calls_per_s"], 3),
        "overhead_ms_per_call": round(on_ray["one_token_ms"] - local["one_token_ms"], 1),
        "ok": True,
    }
