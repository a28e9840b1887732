"""Queue-aware concurrency against a server that queues (figure e of ``benchmarks.run``).

The fake server serves ``slots`` calls at once, each taking ``latency_ms``, and queues the
rest, like a local inference server; the model's ``timeout`` is 1 s. Targets: every item
ok, at most 10% more requests than items, at least 85% of the server's capacity
(``slots / latency``), timed from the first call of a fresh lane once the SDK is imported
(:func:`_warm_up`). ``python -m benchmarks.queueing`` prints the figure.

:func:`run_replicas` (``python -m benchmarks.queueing --replicas``) serves one model from
two such servers of different size (8 and 2 slots): each replica has its own lane, so each
should settle near its own capacity, the small one without a long queue.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from coeval.config.model import ModelConfig
from coeval.contract.manager import registries
from coeval.interfaces.base import GenerateRequest
from coeval.scheduler import Scheduler, SchedulerLimits, WorkItem, WorkOutcome
from coeval_testing.fake_server import FakeServer
from coeval_testing.fake_server._state import FakeConfig

__all__ = ["run", "run_replicas"]


def _drive(base_url: Any, items: int, timeout_s: float) -> tuple[list[WorkOutcome], Any, float]:
    """``items`` calls of one ``vllm`` model at ``base_url`` (a URL or a list of replicas)."""
    model = ModelConfig(name="local", interface="vllm", roles=("student",),
                        parameters={"model": "m", "base_url": base_url, "timeout": timeout_s, "max_tokens": 16})
    iface = registries().interfaces.get("vllm")(model, None)
    outcomes: list[WorkOutcome] = []
    work = [WorkItem(key=str(i), phase="evaluation", model=model, on_done=outcomes.append,
                     request=GenerateRequest(prompt=f"item {i}", params=model.parameters)) for i in range(items)]

    async def go() -> Any:
        try:
            return await Scheduler({"local": iface}, SchedulerLimits()).run("evaluation", work)
        finally:
            await iface.aclose()

    start = time.perf_counter()
    stats = asyncio.run(go())
    return outcomes, stats, time.perf_counter() - start


def _warm_up(base_url: Any, timeout_s: float) -> None:
    """One call on a scheduler of its own before the clock starts: it imports the SDK
    (about 0.9 s for ``openai``, which in a 5 s figure read as a quarter of the capacity
    lost). The timed run starts with a fresh lane, so the limiter learns from nothing."""
    _drive(base_url, 1, timeout_s)


def run(items: int = 420, slots: int = 8, latency_ms: float = 100.0, timeout_s: float = 1.0) -> dict[str, Any]:
    with FakeServer(FakeConfig(slots=slots, latency_ms=latency_ms, log_bodies=False)) as fake:
        _warm_up(fake.url + "/v1", timeout_s)
        warm_up_requests = fake.counts["openai.chat"]
        outcomes, stats, wall = _drive(fake.url + "/v1", items, timeout_s)
        requests = fake.counts["openai.chat"] - warm_up_requests
        peak = fake.state.peak_in_flight
    capacity = slots / (latency_ms / 1000.0)
    ok = sum(o.status == "ok" for o in outcomes)
    lane = next(iter(stats.lanes.values()))
    share = items / wall / capacity
    return {
        "name": "queueing", "items": items, "ok_items": ok, "requests": requests,
        "extra_requests": round(requests / items - 1.0, 4), "wall_s": round(wall, 2),
        "capacity_share": round(share, 3), "client_peak_in_flight": lane.peak_in_flight,
        "final_limit": lane.limit, "server_peak_in_flight": peak,
        "ok": ok == items and requests <= 1.1 * items and share >= 0.85,
    }


def run_replicas(items: int = 500, slots: tuple[int, int] = (8, 2), latency_ms: float = 100.0,
                 timeout_s: float = 1.0) -> dict[str, Any]:
    """One model on two replicas of ``slots`` each: requests, share of the joint capacity,
    and per replica its calls, final limit, peak in flight and latency p50/p95."""
    servers = [FakeServer(FakeConfig(slots=n, latency_ms=latency_ms, log_bodies=False)).start() for n in slots]
    try:
        urls = [server.url + "/v1" for server in servers]
        _warm_up(urls[0], timeout_s)
        warm_up_requests = [server.counts.get("openai.chat", 0) for server in servers]
        outcomes, stats, wall = _drive(urls, items, timeout_s)
        requests = [server.counts["openai.chat"] - before for server, before in zip(servers, warm_up_requests, strict=True)]
    finally:
        for server in servers:
            server.stop()
    capacity = sum(slots) / (latency_ms / 1000.0)
    lanes = {lane.url: lane for lane in stats.lanes.values()}
    replicas = [{"slots": n, "requests": r, "final_limit": lanes[u].limit, "client_peak_in_flight": lanes[u].peak_in_flight,
                 "latency_p50_ms": lanes[u].latency_p50_ms, "latency_p95_ms": lanes[u].latency_p95_ms}
                for n, r, u in zip(slots, requests, urls, strict=True)]
    ok = sum(o.status == "ok" for o in outcomes)
    return {"name": "queueing_replicas", "items": items, "ok_items": ok, "requests": sum(requests),
            "wall_s": round(wall, 2), "capacity_share": round(items / wall / capacity, 3), "replicas": replicas}


if __name__ == "__main__":
    print(json.dumps(run_replicas() if "--replicas" in sys.argv[1:] else run(), indent=2))
