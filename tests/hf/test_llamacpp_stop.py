"""Ctrl-C on a local llama.cpp model: the generation under way ends at its next token and
the calls queued behind it are given back (reported cancelled, not counted as calls), so
the run stops at once instead of after every queued call."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from coeval.config.model import ModelConfig
from coeval.interfaces.base import GenerateRequest
from coeval.run.signals import stop_gracefully
from coeval.scheduler import Scheduler, WorkItem, WorkOutcome
from coeval_hf.llamacpp import LlamaCppInterface

N_ITEMS = 8


@pytest.mark.slow
def test_a_graceful_stop_gives_back_the_queued_local_calls() -> None:
    model = ModelConfig("smol", "llamacpp", parameters={"temperature": 0.7, "max_tokens": 64})
    iface = LlamaCppInterface(model)
    outcomes: list[WorkOutcome] = []
    engine_calls: list[int] = []
    scheduler = Scheduler({"smol": iface})

    def done(outcome: WorkOutcome) -> None:
        outcomes.append(outcome)
        if len(outcomes) == 1:  # the user presses Ctrl-C once the first answer is in
            stop_gracefully(scheduler)

    items = [WorkItem(f"k{i}", "response_collection", model,
                      GenerateRequest(prompt=f"Tell a long story about the colour number {i}.", params=model.parameters), done)
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
    # only the first answer: the call generating when the stop came is cut short
    assert len(ok) == 1 and len(cancelled) == N_ITEMS - 1
    assert len(engine_calls) <= 2  # the first, and the one cut short; none of the queued ones
    assert scheduler.calls["smol"] == 1  # a call given back unanswered is not a call made
    assert stats.cancelled
