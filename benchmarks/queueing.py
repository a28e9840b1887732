"""Queue-aware concurrency against a server that queues (figure f of ``benchmarks.run``).

:func:`run_shapes` (``python -m benchmarks.queueing``): servers of several shapes, each a
process of :mod:`benchmarks.queue_server` (written for this figure, sharing no code with the
project's fake provider): slots, service time, the client's ``timeout`` and what the server
does with calls beyond its slots (queue them, refuse them past a bound, or share its slots'
time among them) vary; two ``vllm`` models send their items to it. Targets, per shape:
every item ok, at most 10% more requests than items, at least 85% of the server's capacity
(``slots / service time``), timed from the first call of a fresh lane once the SDK is
imported (:func:`_warm_up`).

:func:`run` (``--fake``): the project's own fake server, 8 slots of 100 ms, one model.

:func:`run_replicas` (``python -m benchmarks.queueing --replicas``) serves one model from
two such servers of different size (8 and 2 slots): each replica has its own lane, so each
should settle near its own capacity, the small one without a long queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

from coeval.config.model import ModelConfig
from coeval.interfaces.base import GenerateRequest
from coeval.plugins.manager import registries
from coeval.scheduler import Scheduler, SchedulerLimits, WorkItem, WorkOutcome
from coeval_testing.fake_server import FakeServer
from coeval_testing.fake_server._state import FakeConfig

__all__ = ["SHAPES", "run", "run_replicas", "run_shape", "run_shapes"]


def _drive(base_url: Any, items: int, timeout_s: float, models: int = 1) -> tuple[list[WorkOutcome], Any, float]:
    """``items`` calls of ``models`` models (taking turns) at ``base_url`` (a URL or a list of
    replicas): the first through ``vllm``, the second through ``openai`` with a key of its
    own, so each has a lane (and a limiter) of its own, as two models of a config served by
    one machine do."""
    from coeval.config.credential_record import Credentials

    configs = [ModelConfig(name=f"local-{k}", interface=("vllm", "openai")[k % 2], roles=("student",),
                           parameters={"model": "m", "base_url": base_url, "timeout": timeout_s, "max_tokens": 16})
               for k in range(models)]  # fmt: skip
    ifaces = {m.name: registries().interfaces.get(m.interface)(m, None if m.interface == "vllm" else
                                                                Credentials("openai", api_key="sk-queueing-bench"))
              for m in configs}  # fmt: skip
    outcomes: list[WorkOutcome] = []
    work = [WorkItem(key=str(i), phase="evaluation", model=configs[i % models], on_done=outcomes.append,
                     request=GenerateRequest(prompt=f"item {i}", params=configs[i % models].parameters))
            for i in range(items)]  # fmt: skip

    async def go() -> Any:
        try:
            return await Scheduler(dict(ifaces), SchedulerLimits()).run("evaluation", work)
        finally:
            for iface in ifaces.values():
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


#: Server shapes of the figure: (name, slots, service ms, queue behaviour, client timeout s,
#: items, /metrics offered). The first is the issue's: 8 slots of 100 ms that queue the
#: rest, a 1 s timeout.
SHAPES: tuple[tuple[str, int, float, str, float, int, bool], ...] = (
    ("8 slots x 100 ms, fifo queue, 1 s timeout", 8, 100.0, "fifo", 1.0, 420, False),
    ("8 slots x 100 ms, fifo queue serving calls whose client left, 1 s timeout", 8, 100.0, "fifo-keep", 1.0, 420,
     False),
    ("4 slots x 250 ms, fifo queue, 2 s timeout", 4, 250.0, "fifo", 2.0, 120, False),
    ("16 slots x 400 ms, fifo queue, 2 s timeout", 16, 400.0, "fifo", 2.0, 300, False),
    ("8 slots x 300 ms, shared slots (batching), 2 s timeout", 8, 300.0, "shared", 2.0, 200, False),
    ("8 slots x 300 ms, at most 8 waiting (503 past them), 2 s timeout", 8, 300.0, "bounded:8", 2.0, 200, False),
)


@contextlib.contextmanager
def _queue_server(slots: int, service_ms: float, queue: str, metrics: bool) -> Iterator[str]:
    """:mod:`benchmarks.queue_server` in a process of its own; its root URL."""
    cmd = [sys.executable, "-m", "benchmarks.queue_server", "--slots", str(slots), "--service-ms", str(service_ms),
           "--queue", queue, *(["--metrics"] if metrics else [])]
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        if not url.startswith("http"):
            raise RuntimeError(f"the queue server did not start: {server.stderr.read() if server.stderr else ''}")
        yield url
    finally:
        server.terminate()
        server.wait(10)


def _server_stats(url: str) -> dict[str, int]:
    with urllib.request.urlopen(f"{url}/stats", timeout=10) as reply:
        stats: dict[str, int] = json.loads(reply.read())
    return stats


def _fixed_pool(base_url: str, items: int, timeout_s: float, in_flight: int) -> float:
    """Wall seconds of ``items`` calls through the ``vllm`` interface, ``in_flight`` workers
    each taking the next as its last returns, no scheduler: what the server and this machine
    allow a client that knows the server's slots (its calls retried on a timeout)."""
    model = ModelConfig(name="pool", interface="vllm", roles=("student",),
                        parameters={"model": "m", "base_url": base_url, "timeout": timeout_s, "max_tokens": 16})
    iface = registries().interfaces.get("vllm")(model, None)
    request = GenerateRequest(prompt="item", params=model.parameters)

    async def go() -> float:
        left = items

        async def worker() -> None:
            nonlocal left
            while left > 0:
                left -= 1
                try:
                    await iface.generate(request)
                except Exception:  # a timeout: the item goes back
                    left += 1

        started = time.perf_counter()
        try:
            await asyncio.gather(*(worker() for _ in range(in_flight)))
        finally:
            await iface.aclose()
        return time.perf_counter() - started

    return asyncio.run(go())


def run_shape(name: str, slots: int, service_ms: float, queue: str, timeout_s: float, items: int,
              metrics: bool = False, models: int = 2) -> dict[str, Any]:
    """One server shape: ``items`` items of ``models`` models against it."""
    with _queue_server(slots, service_ms, queue, metrics) as url:
        _warm_up(url + "/v1", timeout_s)
        before = _server_stats(url)
        outcomes, stats, wall = _drive(url + "/v1", items, timeout_s, models)
        after = _server_stats(url)
        # the same items with the server's slots known (slots + 1 in flight), on the same machine now
        pool_wall = _fixed_pool(url + "/v1", items, timeout_s, slots + 1)
    requests = after["received"] - before["received"]
    capacity = slots / (service_ms / 1000.0)
    ok = sum(o.status == "ok" for o in outcomes)
    share = items / wall / capacity
    lanes = list(stats.lanes.values())
    return {"shape": name, "items": items, "ok_items": ok, "requests": requests,
            "extra_requests": round(requests / items - 1.0, 4), "wall_s": round(wall, 2),
            "capacity_share": round(share, 3),
            "fixed_pool_share": round(items / pool_wall / capacity, 3),
            "final_limit": [lane.limit for lane in lanes],
            "client_peak_in_flight": [lane.peak_in_flight for lane in lanes],
            "server_peak_waiting": after["peak_waiting"], "rejected": after["rejected"] - before["rejected"],
            "abandoned": after["abandoned"] - before["abandoned"],
            "ok": ok == items and requests <= 1.1 * items and share >= 0.85}  # fmt: skip


def run_shapes(only: list[int] | None = None, scale: float = 1.0) -> dict[str, Any]:
    """``nox -s bench``'s queueing figure: every shape of :data:`SHAPES` (``only``: their
    indexes; ``scale``: items times this, for a quick check)."""
    rows = [run_shape(name, slots, ms, queue, timeout, max(8, round(items * scale)), metrics)
            for i, (name, slots, ms, queue, timeout, items, metrics) in enumerate(SHAPES)
            if only is None or i in only]  # fmt: skip
    return {"name": "queueing", "shapes": rows, "ok": all(r["ok"] for r in rows),
            "target": "per shape: every item ok, <= 110% requests, >= 85% of capacity"}


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--replicas" in args:
        print(json.dumps(run_replicas(), indent=2))
    elif "--fake" in args:
        print(json.dumps(run(), indent=2))
    else:
        picked = [int(a) for a in args if a.isdigit()] or None
        print(json.dumps(run_shapes(picked), indent=2))
