"""The call ledger (``calls.jsonl``): each call written before it is sent and after it
returns; a start without an end counts as made at its estimate; the budget counts calls in
flight at their estimated cost."""

from __future__ import annotations

import asyncio
import errno
import json
from pathlib import Path
from typing import Any

import pytest
from coeval.interfaces.base import FatalModelError, GenerateRequest, GenerateResult, TransientModelError
from coeval.interfaces.sending import announce_send
from coeval.scheduler import RetryPolicy, Scheduler, SchedulerLimits
from coeval.storage.call_ledger import (
    CallLedger,
    LedgerError,
    drop_bad_lines,
    read_ledger,
    settle_open_calls,
)

from tests.core.scheduler_helpers import Recorder, ScriptedInterface, make_items


def run(coro):
    return asyncio.run(coro)


def test_a_start_without_an_end_counts_as_made_at_its_estimate(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    ledger = CallLedger(path, "p1")
    a = ledger.started("m", "evaluation", "k1", 0.002)
    ledger.ended(a, 0.0015)
    b = ledger.started("m", "evaluation", "k2", 0.002)
    c = ledger.started("n", "evaluation", "k3", 0.004)
    ledger.not_sent(c)
    ledger.close()
    totals = read_ledger(path)
    assert dict(totals.calls) == {"m": 2, "n": 0}
    assert totals.spend_by_model() == {"m": pytest.approx(0.0035)}
    assert list(totals.open) == [b]
    assert settle_open_calls(path, totals) == 1
    again = read_ledger(path)
    assert again.open == {} and again.spend_by_model()["m"] == pytest.approx(0.0035)
    last = json.loads(path.read_text().splitlines()[-1])
    assert last == {"end": b, "cost_usd": 0.002, "settled": "estimate"}


def test_a_start_line_cut_by_a_kill_is_not_a_call(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    path.write_text('{"start": "p-1", "model": "m", "phase": "e", "item": "k", "estimate_usd": 0.1}\n'
                    '{"start": "p-2", "model": "m", "ph')
    totals = read_ledger(path)
    assert dict(totals.calls) == {"m": 1}
    writer = CallLedger(path, "p2")
    writer.started("m", "e", "k2", 0.1)  # the cut line goes first
    writer.close()
    assert dict(read_ledger(path).calls) == {"m": 2}


@pytest.mark.parametrize(("line", "field"), [
    ("not json", "line"),
    ('{"start": "p-1", "model": 7, "phase": "e", "item": "k", "estimate_usd": 0.1}', "model"),
    ('{"start": "p-1", "model": "m", "phase": "e", "item": "k", "estimate_usd": "x"}', "estimate_usd"),
    ('{"end": "p-1", "cost_usd": -1}', "cost_usd"),
    ('{"carried": {"calls": {"m": "lots"}}}', "carried.calls"),
    ('{"what": 1}', "line"),
])
def test_a_malformed_line_names_the_file_the_line_and_the_field(tmp_path: Path, line: str, field: str) -> None:
    path = tmp_path / "calls.jsonl"
    good = '{"start": "p-9", "model": "m", "phase": "e", "item": "k", "estimate_usd": 0.1}'
    path.write_text(f"{good}\n{line}\n")
    with pytest.raises(LedgerError) as caught:
        read_ledger(path)
    assert str(caught.value).startswith(f"{path}:2: {field} ")
    assert drop_bad_lines(path) == 1
    assert path.read_text() == good + "\n"
    assert dict(read_ledger(path).calls) == {"m": 1}


class _Journal:
    """A journal that notes what happened in order, and can refuse starts (a full disk)."""

    def __init__(self, iface: ScriptedInterface, full_after: int | None = None) -> None:
        self.iface = iface
        self.full_after = full_after
        self.events: list[tuple[str, ...]] = []

    def started(self, model: str, phase: str, item: str, estimate_usd: float) -> str:
        if self.full_after is not None and len([e for e in self.events if e[0] == "start"]) >= self.full_after:
            raise OSError(errno.ENOSPC, "No space left on device", "run/calls.jsonl")
        self.events.append(("start", item, str(self.iface.total_calls)))
        return item

    def ended(self, call: str, model: str, cost_usd: float | None) -> None:
        self.events.append(("end", call, str(cost_usd)))

    def not_sent(self, call: str, model: str) -> None:
        self.events.append(("not_sent", call))


def test_each_call_is_written_before_it_is_sent_and_after_it_returns() -> None:
    iface = ScriptedInterface(cost=0.01, default_concurrency=1, max_concurrency=1)
    journal = _Journal(iface)
    rec = Recorder()
    run(Scheduler({"m": iface}, journal=journal).run("evaluation", make_items(iface, 3, rec)))
    # each start is written while the interface has seen only the calls before it
    assert journal.events == [("start", "m:p0", "0"), ("end", "m:p0", "0.01"),
                              ("start", "m:p1", "1"), ("end", "m:p1", "0.01"),
                              ("start", "m:p2", "2"), ("end", "m:p2", "0.01")]


def test_a_call_whose_start_cannot_be_written_is_not_sent() -> None:
    iface = ScriptedInterface(cost=0.01, default_concurrency=1, max_concurrency=1)
    journal = _Journal(iface, full_after=2)
    rec = Recorder()
    scheduler = Scheduler({"m": iface}, journal=journal)
    with pytest.raises(OSError, match=r"calls\.jsonl"):
        run(scheduler.run("evaluation", make_items(iface, 5, rec)))
    assert iface.total_calls == 2 and scheduler.calls["m"] == 2
    assert rec.by_status() == {"ok": 2, "skipped": 3}


class _AnnouncingInterface(ScriptedInterface):
    """Builds its request first (a step the event loop may interleave), then says it sends:
    as the SDKs' HTTP clients do through their request hook. A prompt in ``fail_before_send``
    fails while the request is being built: nothing leaves."""

    announces_send = True

    def __init__(self, journal_events: list[tuple[str, ...]], fail_before_send: set[str] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.events = journal_events
        self.fail_before_send = fail_before_send or set()

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        self.events.append(("built", request.prompt))
        await asyncio.sleep(0)
        if request.prompt in self.fail_before_send:
            raise FatalModelError("bad request parameters")
        announce_send()
        return await super().generate(request)


def test_an_announcing_interface_has_its_start_written_when_the_request_leaves() -> None:
    events: list[tuple[str, ...]] = []
    iface = _AnnouncingInterface(events, fail_before_send={"p1"}, cost=0.01, default_concurrency=1,
                                 max_concurrency=1)
    journal = _Journal(iface)
    journal.events = events
    rec = Recorder()
    scheduler = Scheduler({"m": iface}, journal=journal)
    run(scheduler.run("evaluation", make_items(iface, 3, rec)))
    # the start line follows the request's building (a kill there would have counted a call
    # never sent); the call that failed before leaving has no line at all
    assert events == [("built", "p0"), ("start", "m:p0", "0"), ("end", "m:p0", "0.01"),
                      ("built", "p1"),
                      ("built", "p2"), ("start", "m:p2", "1"), ("end", "m:p2", "0.01")]
    assert rec.by_status() == {"ok": 2, "failed": 1}


def test_an_announced_start_that_cannot_be_written_stops_the_request_and_the_phase() -> None:
    events: list[tuple[str, ...]] = []
    iface = _AnnouncingInterface(events, cost=0.01, default_concurrency=1, max_concurrency=1)
    journal = _Journal(iface, full_after=1)
    journal.events = events
    rec = Recorder()
    scheduler = Scheduler({"m": iface}, journal=journal)
    with pytest.raises(OSError, match=r"calls\.jsonl"):
        run(scheduler.run("evaluation", make_items(iface, 4, rec)))
    assert iface.total_calls == 1  # the second request never reached the interface's send
    assert scheduler.calls["m"] == 1  # nor the quota
    assert rec.by_status() == {"ok": 1, "skipped": 3}


def test_a_refused_connection_takes_its_start_back_and_a_failed_call_is_ended() -> None:
    # the first attempt's connection is refused (the server never saw it), the second gets a
    # 500 (the server saw it): only the second counts as a call
    refused = TransientModelError("connection refused")
    refused.__cause__ = ConnectionRefusedError(111, "Connection refused")
    iface = ScriptedInterface(script={"p0": [refused, TransientModelError("HTTP 500")]}, cost=0.01,
                              default_concurrency=1, max_concurrency=1)
    journal = _Journal(iface)
    limits = SchedulerLimits(retry=RetryPolicy(base_delay_s=0.001, max_delay_s=0.002))
    run(Scheduler({"m": iface}, limits, journal=journal).run("evaluation", make_items(iface, 1, Recorder())))
    assert journal.events == [("start", "m:p0", "0"), ("not_sent", "m:p0"),
                              ("start", "m:p0", "1"), ("end", "m:p0", "None"),
                              ("start", "m:p0", "2"), ("end", "m:p0", "0.01")]


def test_the_budget_counts_calls_in_flight_at_their_estimate() -> None:
    iface = ScriptedInterface(cost=0.001, delay=0.002, default_concurrency=8, max_concurrency=8)
    rec = Recorder()
    limits = SchedulerLimits(budget_usd=0.006, call_estimates_usd={("m", "evaluation"): 0.001})
    stats = run(Scheduler({"m": iface}, limits).run("evaluation", make_items(iface, 40, rec)))
    assert iface.total_calls == 6
    assert stats.spend_usd == pytest.approx(0.006)
    assert stats.skips["budget"] == 34


def test_without_a_price_the_first_call_finds_it_and_the_budget_holds() -> None:
    iface = ScriptedInterface(cost=0.001, delay=0.002, default_concurrency=8, max_concurrency=8)
    rec = Recorder()
    stats = run(Scheduler({"m": iface}, SchedulerLimits(budget_usd=0.006)).run("evaluation",
                                                                                make_items(iface, 40, rec)))
    assert iface.total_calls == 6
    assert stats.spend_usd == pytest.approx(0.006)


def test_a_price_guessed_low_overshoots_by_less_than_one_call() -> None:
    iface = ScriptedInterface(cost=0.001, delay=0.002, default_concurrency=8, max_concurrency=8)
    rec = Recorder()
    limits = SchedulerLimits(budget_usd=0.0065, call_estimates_usd={("m", "evaluation"): 0.0001})
    stats = run(Scheduler({"m": iface}, limits).run("evaluation", make_items(iface, 40, rec)))
    # the first wave starts on the low guess; later calls wait for what the first ones cost
    assert stats.spend_usd <= 0.0065 + 8 * 0.001
    assert iface.total_calls == round(stats.spend_usd / 0.001)
