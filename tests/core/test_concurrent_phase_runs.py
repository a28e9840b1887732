"""Phases run at once (pipelined) share their connection's limit and its slots fairly."""

from __future__ import annotations

import asyncio

import attrs
from coeval.scheduler import Scheduler

from .scheduler_helpers import Recorder, ScriptedInterface, make_items


def _two_phases(iface: ScriptedInterface, first: int, second: int) -> tuple[Recorder, Recorder, list[str]]:
    """Run two phases on one scheduler at once; the order in which their items finished."""
    order: list[str] = []
    rec_a, rec_b = Recorder(), Recorder()

    def noting(rec: Recorder, tag: str):
        def noted(outcome) -> None:
            order.append(tag)
            rec(outcome)
        return noted

    items_a = [attrs.evolve(i, on_done=noting(rec_a, "a")) for i in make_items(iface, first, rec_a, prefix="a")]
    items_b = [attrs.evolve(i, on_done=noting(rec_b, "b")) for i in make_items(iface, second, rec_b, prefix="b")]
    scheduler = Scheduler({"m": iface})

    async def both() -> None:
        await asyncio.gather(scheduler.run("data_generation", items_a), scheduler.run("response_collection", items_b))

    asyncio.run(both())
    return rec_a, rec_b, order


def test_phases_run_at_once_stay_within_their_connections_limit() -> None:
    iface = ScriptedInterface(delay=0.002, default_concurrency=4, max_concurrency=4)
    rec_a, rec_b, _ = _two_phases(iface, 60, 60)
    assert len(rec_a.outcomes) == 60 and len(rec_b.outcomes) == 60
    assert iface.peak_in_flight == 4  # each phase alone would also run 4: together, 4 in all


def test_a_phase_started_later_gets_slots_before_the_first_one_ends() -> None:
    iface = ScriptedInterface(delay=0.002, default_concurrency=4, max_concurrency=4)
    _, _, order = _two_phases(iface, 200, 20)
    # the second phase's items do not wait for all 200 of the first: slots are handed over
    last_b = max(i for i, tag in enumerate(order) if tag == "b")
    assert last_b < 100
