"""Queue-aware concurrency against a server that queues (figure e of ``benchmarks.run``).

The fake server serves ``slots`` calls at once, each taking ``latency_ms``, and queues the
rest, like a local inference server; the model's ``timeout`` is 1 s. Targets: every item
ok, at most 10% more requests than items, at least 85% of the server's capacity
(``slots / latency``). ``python -m benchmarks.queueing`` prints the figure.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from coeval.config.model import ModelConfig
from coeval.interfaces.base import GenerateRequest
from coeval.plugins import registries
from coeval.scheduler import Scheduler, SchedulerLimits, WorkItem, WorkOutcome

from coeval_providers.fake_server import FakeServer
from coeval_providers.fake_server._state import FakeConfig

__all__ = ["run"]


def run(items: int = 420, slots: int = 8, latency_ms: float = 100.0, timeout_s: float = 1.0) -> dict[str, Any]:
    with FakeServer(FakeConfig(slots=slots, latency_ms=latency_ms, log_bodies=False)) as fake:
        model = ModelConfig(name="local", interface="vllm", roles=("student",),
                            parameters={"model": "m", "base_url": fake.url + "/v1", "timeout": timeout_s, "max_tokens": 16})
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
        wall = time.perf_counter() - start
        requests = fake.counts["openai.chat"]
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


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
