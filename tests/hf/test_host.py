"""The local-model host: batching of concurrent calls, one resident model, failures."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import pytest
from coeval.interfaces.base import FatalModelError, GenerateRequest, GenerateResult, ModelError
from coeval_hf._host import ModelHost, PendingCall


class RecordingEngine:
    """Answers with the prompt upper-cased; remembers what ran and what was loaded."""

    def __init__(self, name: str, log: list[str], *, batch_limit: int = 100, delay: float = 0.0,
                 fail_on: str | None = None) -> None:
        self.name, self.log, self.batch_limit, self.delay, self.fail_on = name, log, batch_limit, delay, fail_on
        self.thread_ids: set[int] = set()
        log.append(f"load {name}")

    def select_batch(self, pending: Sequence[PendingCall]) -> list[PendingCall]:
        return list(pending[: self.batch_limit])

    def run_batch(self, calls: Sequence[PendingCall]) -> list[GenerateResult | ModelError]:
        self.thread_ids.add(threading.get_ident())
        if self.delay:
            threading.Event().wait(self.delay)
        self.log.append(f"run {self.name} x{len(calls)}")
        if self.fail_on and any(c.request.prompt == self.fail_on for c in calls):
            raise RuntimeError("engine blew up")
        return [GenerateResult(text=f"{self.name}:{c.request.prompt.upper()}") for c in calls]

    def unload(self) -> None:
        self.log.append(f"unload {self.name}")


def req(prompt: str) -> GenerateRequest:
    return GenerateRequest(prompt=prompt)


def test_concurrent_calls_run_as_batches_and_answers_go_to_their_callers() -> None:
    host, log = ModelHost(), []
    engines: list[RecordingEngine] = []

    def load() -> RecordingEngine:
        engines.append(RecordingEngine("a", log, batch_limit=4, delay=0.05))
        return engines[-1]

    async def main() -> list[GenerateResult]:
        slot = host.acquire("a", load, "model a")
        return await asyncio.gather(*(host.submit(slot, req(f"p{i}")) for i in range(10)))

    results = asyncio.run(main())
    assert [r.text for r in results] == [f"a:P{i}" for i in range(10)]
    sizes = [int(line.split("x")[1]) for line in log if line.startswith("run")]
    assert sum(sizes) == 10 and max(sizes) == 4 and len(sizes) <= 4  # batched, never above the engine's limit
    assert engines[0].thread_ids and threading.get_ident() not in engines[0].thread_ids  # off the event loop
    assert log.count("load a") == 1


def test_second_model_unloads_the_first_and_each_loads_once_when_calls_interleave() -> None:
    host, log = ModelHost(switch_grace_s=0.2), []

    async def main() -> None:
        a = host.acquire("a", lambda: RecordingEngine("a", log, batch_limit=1, delay=0.01), "model a")
        b = host.acquire("b", lambda: RecordingEngine("b", log, batch_limit=1, delay=0.01), "model b")
        calls = [host.submit(slot, req(f"{name}{i}")) for i in range(5) for name, slot in (("a", a), ("b", b))]
        results = await asyncio.gather(*calls)
        assert {r.text for r in results} == {f"{n}:{n.upper()}{i}" for n in "ab" for i in range(5)}

    asyncio.run(main())
    loads = [line for line in log if not line.startswith("run")]
    assert loads == ["load a", "unload a", "load b"]  # one resident at a time, no ping-pong


def test_last_user_leaving_unloads_the_resident_model() -> None:
    host, log = ModelHost(), []

    async def main() -> None:
        slot = host.acquire("a", lambda: RecordingEngine("a", log), "model a")
        await host.submit(slot, req("x"))
        host.release(slot)
        for _ in range(100):
            if "unload a" in log:
                return
            await asyncio.sleep(0.02)

    asyncio.run(main())
    assert log[-1] == "unload a"
    assert host.resident_key is None


def test_a_failed_load_fails_every_call_of_that_model_fast_and_keeps_the_worker_alive() -> None:
    host, log = ModelHost(), []

    def broken() -> RecordingEngine:
        raise FatalModelError("model x: weights are missing")

    async def main() -> None:
        bad = host.acquire("x", broken, "model x")
        outcomes = await asyncio.gather(*(host.submit(bad, req(str(i))) for i in range(3)), return_exceptions=True)
        assert all(isinstance(o, FatalModelError) and "weights are missing" in str(o) for o in outcomes)
        with pytest.raises(FatalModelError):
            await host.submit(bad, req("again"))
        good = host.acquire("a", lambda: RecordingEngine("a", log), "model a")
        assert (await host.submit(good, req("ok"))).text == "a:OK"

    asyncio.run(main())


def test_an_engine_exception_becomes_a_retryable_error_for_that_batch_only() -> None:
    host, log = ModelHost(), []

    async def main() -> None:
        slot = host.acquire("a", lambda: RecordingEngine("a", log, batch_limit=1, fail_on="boom"), "model a")
        with pytest.raises(ModelError) as info:
            await host.submit(slot, req("boom"))
        assert info.value.retryable and "engine blew up" in str(info.value)
        assert (await host.submit(slot, req("fine"))).text == "a:FINE"

    asyncio.run(main())


def test_cancelled_calls_are_dropped_without_running() -> None:
    host, log = ModelHost(), []

    async def main() -> None:
        slot = host.acquire("a", lambda: RecordingEngine("a", log, batch_limit=1, delay=0.1), "model a")
        first = asyncio.ensure_future(host.submit(slot, req("first")))
        await asyncio.sleep(0.02)  # the worker is busy with "first"
        doomed = asyncio.ensure_future(host.submit(slot, req("doomed")))
        await asyncio.sleep(0)
        doomed.cancel()
        assert (await first).text == "a:FIRST"
        assert (await host.submit(slot, req("after"))).text == "a:AFTER"

    asyncio.run(main())
    assert sum(int(line.split("x")[1]) for line in log if line.startswith("run")) == 2
