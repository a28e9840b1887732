"""A phase's items are taken as the lanes need them: the first call goes out before the last
item is built, items held stay O(concurrency), and a stop builds nothing more."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

from coeval.interfaces.base import GenerateRequest
from coeval.phases._items import LazyItems
from coeval.scheduler import Scheduler, WorkItem

from .scheduler_helpers import Recorder, ScriptedInterface


class CountingItems:
    """A sized iterable that counts the items built, and notes how many were built when
    the interface saw its first call."""

    def __init__(self, iface: ScriptedInterface, n: int, recorder: Recorder) -> None:
        self.iface, self.n, self.recorder = iface, n, recorder
        self.built = 0
        self.built_at_first_call: int | None = None
        self.most_alive = 0

    def __len__(self) -> int:
        return self.n

    def _build(self, i: int) -> WorkItem:
        self.built += 1
        self.most_alive = max(self.most_alive, self.built - len(self.recorder.outcomes))
        return WorkItem(key=f"m:p{i}", phase="evaluation", model=self.iface.model,
                        request=GenerateRequest(prompt=f"p{i}"), on_done=self.recorder)

    def __iter__(self) -> Iterator[WorkItem]:
        return (self._build(i) for i in range(self.n))


class FirstCallNotes(ScriptedInterface):
    def __init__(self, items: list[CountingItems], **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._items = items

    async def generate(self, request: GenerateRequest):  # type: ignore[no-untyped-def]
        source = self._items[0]
        if source.built_at_first_call is None:
            source.built_at_first_call = source.built
        return await super().generate(request)


def test_the_first_call_comes_before_the_last_item_is_built() -> None:
    holder: list[CountingItems] = []
    iface = FirstCallNotes(holder, default_concurrency=8, max_concurrency=8)
    rec = Recorder()
    items = CountingItems(iface, 5000, rec)
    holder.append(items)
    stats = asyncio.run(Scheduler({"m": iface}).run("evaluation", items))
    assert stats.total == 5000 and stats.ok == 5000 and len(rec.outcomes) == 5000
    assert items.built_at_first_call is not None and items.built_at_first_call < 5000
    assert items.built_at_first_call <= 256  # one buffer, not the phase
    assert items.most_alive <= 256 + 1  # items built and not yet done stay bounded


def test_a_stop_builds_no_more_items_and_counts_them_unstarted() -> None:
    iface = ScriptedInterface(delay=0.002, default_concurrency=4, max_concurrency=4)
    rec = Recorder()
    items = CountingItems(iface, 100_000, rec)

    async def main() -> Any:
        scheduler = Scheduler({"m": iface})
        task = asyncio.ensure_future(scheduler.run("evaluation", items))
        while len(rec.outcomes) < 20:
            await asyncio.sleep(0.001)
        scheduler.cancel()
        return await task

    stats = asyncio.run(main())
    assert stats.cancelled
    assert items.built < 1000  # the rest of the 100,000 was never built
    assert stats.unstarted == 100_000 - items.built
    assert stats.ok + stats.skipped + stats.unstarted == 100_000
    assert stats.ok == iface.total_calls  # every call made was recorded


def test_lazy_items_of_a_phase_stream_too() -> None:
    iface = ScriptedInterface(default_concurrency=4, max_concurrency=4)
    rec = Recorder()
    built: list[int] = []
    calls_when_built: list[int] = []

    def build(i: int) -> WorkItem:
        built.append(i)
        calls_when_built.append(iface.total_calls)
        return WorkItem(key=f"m:p{i}", phase="evaluation", model=iface.model,
                        request=GenerateRequest(prompt=f"p{i}"), on_done=rec)

    stats = asyncio.run(Scheduler({"m": iface}).run("evaluation", LazyItems(list(range(2000)), build)))
    assert stats.ok == 2000
    assert calls_when_built[-1] > 0  # the last item was built after calls had been made


def test_a_limit_that_is_not_used_does_not_grow() -> None:
    # an instant interface never has more than one call in flight: its limit (a worker task
    # per unit, each a turn of the event loop) must stay where it started, not climb to 512
    iface = ScriptedInterface(default_concurrency=4, max_concurrency=512)
    rec = Recorder()
    stats = asyncio.run(Scheduler({"m": iface}).run("evaluation", CountingItems(iface, 3000, rec)))
    assert stats.ok == 3000
    [lane] = stats.lanes.values()
    assert lane.limit == 4 and lane.counters.increases == 0


def test_a_used_limit_still_grows() -> None:
    iface = ScriptedInterface(delay=0.005, default_concurrency=4, max_concurrency=64)
    rec = Recorder()
    stats = asyncio.run(Scheduler({"m": iface}).run("evaluation", CountingItems(iface, 1500, rec)))
    [lane] = stats.lanes.values()
    assert lane.limit == 64 and lane.peak_in_flight == 64
