"""The scheduler's batch-executor protocol and its progress reporting."""

from __future__ import annotations

import asyncio
import io

from coeval.console.progress import ProgressReporter
from coeval.interfaces.base import GenerateResult
from coeval.scheduler import BatchExecutor, Scheduler, SchedulerLimits, WorkOutcome
from rich.console import Console

from .scheduler_helpers import Recorder, ScriptedInterface, make_items, transient


class FakeBatchExecutor:
    """Takes items of model ``b``; answers all but ``leave_out`` of them."""

    def __init__(self, *, leave_out: int = 0, fail: bool = False, cost: float = 0.0, report_twice: bool = False):
        self.leave_out = leave_out
        self.fail = fail
        self.cost = cost
        self.report_twice = report_twice
        self.received: list[str] = []

    def wants(self, item) -> bool:
        return item.model.name == "b"

    async def run(self, phase_id, items, on_outcome) -> None:
        self.received = [i.key for i in items]
        await asyncio.sleep(0.01)
        for item in items[: len(items) - self.leave_out]:
            outcome = WorkOutcome(item, "ok", value="batched", result=GenerateResult("batched"), attempts=1,
                                  cost_usd=self.cost or None)
            on_outcome(outcome)
            if self.report_twice:
                on_outcome(outcome)
        if self.fail:
            raise RuntimeError("provider batch API returned 500")


def test_the_executor_satisfies_the_protocol():
    assert isinstance(FakeBatchExecutor(), BatchExecutor)


def test_wanted_items_go_to_the_batch_executor_the_rest_run_in_real_time():
    a = ScriptedInterface(name="a")
    b = ScriptedInterface(name="b")
    rec = Recorder()
    executor = FakeBatchExecutor(cost=0.5, report_twice=True)
    items = make_items(a, 5, rec) + make_items(b, 7, rec)
    stats = asyncio.run(Scheduler({"a": a, "b": b}, batch_executor=executor).run("response_collection", items))
    assert b.total_calls == 0
    assert len(executor.received) == 7
    assert stats.ok == 12
    assert all(rec.outcomes[f"b:p{i}"].value == "batched" for i in range(7))
    assert stats.calls["b"] == 7  # batch requests count against the quota as calls
    assert stats.spend_usd == 3.5  # reported twice, counted once


def test_items_the_executor_leaves_are_pending_and_its_crash_fails_the_rest():
    b = ScriptedInterface(name="b")
    rec = Recorder()
    asyncio.run(Scheduler({"b": b}, batch_executor=FakeBatchExecutor(leave_out=2)).run("p", make_items(b, 5, rec)))
    assert [o.error_kind for o in rec.outcomes.values() if o.status == "skipped"] == ["batch_pending"] * 2

    rec2 = Recorder()
    asyncio.run(Scheduler({"b": b}, batch_executor=FakeBatchExecutor(leave_out=3, fail=True)).run("p", make_items(b, 5, rec2)))
    failed = [o for o in rec2.outcomes.values() if o.status == "failed"]
    assert len(failed) == 3 and all(o.error_kind == "batch" and "500" in (o.error or "") for o in failed)


def test_quota_is_reserved_before_handing_items_to_the_executor():
    b = ScriptedInterface(name="b")
    rec = Recorder()
    executor = FakeBatchExecutor()
    stats = asyncio.run(
        Scheduler({"b": b}, SchedulerLimits(quota={"b": 4}), batch_executor=executor).run("p", make_items(b, 10, rec))
    )
    assert len(executor.received) == 4
    assert stats.ok == 4 and stats.skips["quota"] == 6


def test_progress_counts_and_prints_a_summary_line_off_a_terminal():
    out = io.StringIO()
    reporter = ProgressReporter(console=Console(file=out, force_terminal=False, width=200))
    assert not reporter.enabled
    iface = ScriptedInterface(script={"p3": [transient()]}, cost=0.25)
    rec = Recorder()
    from coeval.scheduler import RetryPolicy

    limits = SchedulerLimits(retry=RetryPolicy(base_delay_s=0.001))
    asyncio.run(Scheduler({"m": iface}, limits, progress=reporter).run("evaluation", make_items(iface, 10, rec)))
    reporter.close()
    tracker = reporter.trackers[0]
    assert (tracker.done, tracker.ok, tracker.retries, tracker.total) == (10, 10, 1, 10)
    line = out.getvalue().strip()
    assert line.startswith("evaluation: 10/10 done (10 ok, 0 failed)")
    assert "1 retries" in line and "$2.5000" in line
    assert "\x1b[" not in line  # plain text, no terminal codes


def test_progress_bars_draw_on_a_terminal():
    out = io.StringIO()
    reporter = ProgressReporter(console=Console(file=out, force_terminal=True, width=160))
    assert reporter.enabled
    iface = ScriptedInterface(delay=0.001)
    asyncio.run(Scheduler({"m": iface}, progress=reporter).run("data_generation", make_items(iface, 20, Recorder())))
    reporter.close()
    text = out.getvalue()
    assert "data_generation" in text and "20/20" in text


def test_the_bar_shows_the_phase_total_while_it_runs():
    reporter = ProgressReporter(console=Console(file=io.StringIO(), force_terminal=True, width=160))
    iface = ScriptedInterface(delay=0.01, default_concurrency=2, max_concurrency=2)
    rec = Recorder()

    async def main():
        task = asyncio.ensure_future(Scheduler({"m": iface}, progress=reporter).run("evaluation", make_items(iface, 50, rec)))
        while len(rec.outcomes) < 6:
            await asyncio.sleep(0.005)
        snapshot = io.StringIO()
        assert reporter._live is not None
        Console(file=snapshot, width=160).print(reporter._live.get_renderable())
        await task
        return snapshot.getvalue()

    text = asyncio.run(main())
    reporter.close()
    assert "/50" in text and "evaluation" in text
