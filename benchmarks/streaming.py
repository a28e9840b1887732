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
    sys.stderr = open(os.devnull, "w")  # the "stopping after the calls in flight" line
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


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
