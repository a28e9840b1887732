"""Ctrl-C on a local llama.cpp model: the calls queued behind the one generating are given
back at once (reported cancelled, not run, not counted as calls), so the run stops after at
most the generation under way instead of after every queued one."""

from __future__ import annotations

import asyncio
from typing import Any

from coeval.config.model import ModelConfig
from coeval.interfaces.base import GenerateRequest
from coeval.running.signals import stop_gracefully
from coeval.scheduler import Scheduler, WorkItem, WorkOutcome
from coeval_hf.llamacpp import LlamaCppInterface

N_ITEMS = 8


def test_a_graceful_stop_gives_back_the_queued_local_calls() -> None:
    model = ModelConfig("smol", "llamacpp", parameters={"temperature": 0.7, "max_tokens": 32})
    iface = LlamaCppInterface(model)
    outcomes: list[WorkOutcome] = []
    engine_calls: list[int] = []
    scheduler = Scheduler({"smol": iface})

    def done(outcome: WorkOutcome) -> None:
        outcomes.append(outcome)
        if len(outcomes) == 1:  # the user presses Ctrl-C once the first answer is in
            stop_gracefully(scheduler)

    items = [WorkItem(f"k{i}", "response_collection", model,
                      GenerateRequest(prompt=f"Name a colour number {i}.", params=model.parameters), done)
             for i in range(N_ITEMS)]

    async def main() -> Any:
        original = iface._load

        def counting_load() -> Any:
            engine = original()
            run_one = engine._run_one

            def counted(request: GenerateRequest) -> Any:
                engine_calls.append(1)
                return run_one(request)

            engine._run_one = counted  # type: ignore[method-assign]
            return engine

        iface._load = counting_load  # type: ignore[method-assign]
        try:
            return await scheduler.run("response_collection", items)
        finally:
            await iface.aclose()

    stats = asyncio.run(main())
    ok = [o for o in outcomes if o.status == "ok"]
    cancelled = [o for o in outcomes if o.status == "skipped"]
    assert len(outcomes) == N_ITEMS
    # the first answer, and at most the one generating when the stop came
    assert 1 <= len(ok) <= 2 and len(cancelled) == N_ITEMS - len(ok)
    assert len(engine_calls) == len(ok)
    assert scheduler.calls["smol"] == len(ok)  # a call given back unstarted is not a call made
    assert stats.cancelled
