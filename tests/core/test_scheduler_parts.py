"""The scheduler's parts, each built and driven alone: the allowance, the router, the
outcomes, the intake, the workers and the retries (the scheduler composes them)."""

from __future__ import annotations

import asyncio
import random

import attrs
from coeval.interfaces.base import RateLimitError, TransientModelError
from coeval.scheduler import ManualClock, RetryPolicy, SchedulerStats, WorkOutcome
from coeval.scheduler.admission import Admission
from coeval.scheduler.allowance import Allowance
from coeval.scheduler.intake import MIN_BUFFER, Intake
from coeval.scheduler.job import Job
from coeval.scheduler.lanes import Lane
from coeval.scheduler.outcomes import Outcomes
from coeval.scheduler.phase_run import UNWRITTEN, PhaseRun
from coeval.scheduler.retry import Retries
from coeval.scheduler.router import Router
from coeval.scheduler.workers import Workers

from .scheduler_helpers import Recorder, ScriptedInterface, make_items


def phase_run() -> PhaseRun:
    return PhaseRun("evaluation", SchedulerStats(phase="evaluation"), None)


def outcomes_alone(refilled: list[PhaseRun] | None = None) -> Outcomes:
    return Outcomes(Allowance({}, None), Admission(None), None,
                    refill=(refilled.append if refilled is not None else lambda run: None))


def test_allowance_counts_calls_against_the_quota_and_spend_against_the_budget():
    allowance = Allowance({"m": 3, "free": None}, 0.10, calls_before={"m": 2}, spend_before_usd=0.05)
    assert allowance.quota_left("m") == 1 and allowance.quota_left("free") is None
    allowance.reserve("m")
    assert allowance.quota_reached("m") and allowance.quota_left("m") == 0
    allowance.give_back("m")
    assert not allowance.quota_reached("m") and allowance.calls["m"] == 2
    for _ in range(4):
        allowance.add_spend(0.01)
    assert not allowance.over_budget()
    allowance.add_spend(0.01)  # 0.05 + 5 x 0.01 reaches 0.10 despite float rounding
    assert allowance.over_budget()


def test_router_gives_models_of_one_connection_one_lane_and_keeps_its_limit_across_phases():
    a = ScriptedInterface("a", key="shared", max_concurrency=16)
    b = ScriptedInterface("b", key="shared", max_concurrency=5)
    router = Router({"a": a, "b": b})
    router.prepare()
    first = phase_run()
    lane = router.lane_of(first, "a", a)
    assert router.lane_of(first, "b", b) is lane
    assert lane.models == ["a", "b"] and list(first.lanes) == ["shared"]
    limiter = router.limiter("shared")
    assert limiter is lane.limit and limiter.maximum == 5  # the smaller bound of the two models
    second = phase_run()
    again = router.lane_of(second, "a", a)
    assert again is not lane and again.limit is limiter and again.slots is lane.slots


def test_outcomes_report_an_item_once_and_a_failed_write_stops_the_phase():
    rec = Recorder()
    iface = ScriptedInterface()
    run = phase_run()
    outcomes = outcomes_alone()
    job = Job(make_items(iface, 1, rec)[0], iface)
    run.live.add(job)
    run.remaining = 1
    outcomes.finish(run, job, "ok", value="v")
    outcomes.finish(run, job, "failed")  # a second report of the same job is ignored
    assert rec.outcomes["m:p0"].status == "ok" and rec.outcomes["m:p0"].value == "v"
    assert run.stats.ok == 1 and run.stats.failed == 0 and run.finished.is_set()

    def full_disk(_outcome: WorkOutcome) -> None:
        raise OSError(28, "No space left on device")

    told: list[tuple[str, str | None]] = []

    class Tracker:
        total = 0

        def item_done(self, status: str, reason: str | None = None) -> None:
            told.append((status, reason))

    run = PhaseRun("evaluation", SchedulerStats(phase="evaluation"), Tracker())  # type: ignore[arg-type]
    broken = Job(attrs.evolve(make_items(iface, 1, Recorder())[0], on_done=full_disk), iface)
    run.remaining = 2
    outcomes.finish(run, broken, "ok")
    assert run.stopping and run.stop_reason == UNWRITTEN and isinstance(run.on_done_error, OSError)
    assert told == [("skipped", UNWRITTEN)]  # the item is not done: its record was not written


def test_intake_streams_a_phase_a_buffer_at_a_time_and_fails_an_item_without_an_interface():
    iface = ScriptedInterface()
    rec = Recorder()
    router = Router({"m": iface})
    outcomes = outcomes_alone()
    spawned: list[Lane] = []
    workers = Workers(ManualClock(), attempt=lambda run, lane, job: asyncio.sleep(0), refill=lambda run: None)
    workers.spawn = lambda run, lane: spawned.append(lane)  # type: ignore[method-assign]
    intake = Intake({"m": iface}, router, outcomes, workers)
    run = phase_run()
    intake.stream(run, iter(make_items(iface, 1000, rec)))
    intake.refill(run)
    lane = run.lanes["scripted:m"]
    assert run.routed == MIN_BUFFER == len(lane.queue.ready) and spawned == [lane]
    orphan = make_items(iface, 1, rec, model_name="gone", prefix="x")
    assert intake.route(phase_run(), orphan) == []
    assert rec.outcomes["gone:x0"].status == "failed"
    assert rec.outcomes["gone:x0"].error == "no interface is loaded for model 'gone'"


def test_workers_start_no_more_than_the_limit_and_a_lane_waits_for_a_slot():
    iface = ScriptedInterface(default_concurrency=2)
    router = Router({"m": iface})
    rec = Recorder()
    called: list[str] = []

    async def attempt(run: PhaseRun, lane: Lane, job: Job) -> None:
        called.append(job.item.key)
        await asyncio.sleep(0)

    async def drive() -> tuple[int, int]:
        workers = Workers(ManualClock(), attempt=attempt, refill=lambda run: None)
        first, second = phase_run(), phase_run()
        lanes = []
        for run in (first, second):
            lane = router.lane_of(run, "m", iface)
            lane.queue.ready.extend(Job(item, iface) for item in make_items(iface, 5, rec, prefix=run.phase_id))
            lanes.append(lane)
        workers.spawn(first, lanes[0])
        workers.spawn(second, lanes[1])
        started = lanes[0].workers, lanes[1].workers
        assert id(lanes[1]) in lanes[1].slots.waiting  # both slots held by the first phase's lane
        while first.tasks or second.tasks:
            await asyncio.sleep(0)
        return started

    assert asyncio.run(drive()) == (2, 0)
    assert len(called) == 10  # the waiting lane got the slots given up


def test_retries_queue_a_failed_call_after_its_backoff_and_fail_it_at_the_bound():
    clock = ManualClock()
    iface = ScriptedInterface()
    rec = Recorder()

    async def drive() -> Lane:
        run = phase_run()
        lane = Router({"m": iface}).lane_of(run, "m", iface)
        workers = Workers(clock, attempt=lambda run, lane, job: asyncio.sleep(0), refill=lambda run: None)
        workers.spawn = lambda run, lane: None  # type: ignore[method-assign]
        retries = Retries(RetryPolicy(base_delay_s=1.0), 3, clock, random.Random(1), outcomes_alone(), workers)
        job = Job(make_items(iface, 1, rec)[0], iface)
        run.remaining = 1
        job.attempts = 1
        retries.failed(run, lane, job, TransientModelError("503"), lane.limit.started())
        assert lane.queue.delayed == 1 and not lane.queue.ready
        await asyncio.gather(*run.tasks)
        assert lane.queue.ready[0] is job and run.stats.retries["transient"] == 1
        job.attempts = 3
        retries.failed(run, lane, job, RateLimitError("429", retry_after=7.0), lane.limit.started())
        return lane

    lane = asyncio.run(drive())
    assert 0.5 <= clock.sleeps[0] <= 1.0  # equal jitter: half the nominal second at least
    assert lane.paused_until == clock.now() + 7.0 and lane.pauses == 1  # Retry-After pauses the lane
    outcome = rec.outcomes["m:p0"]
    assert outcome.status == "failed" and outcome.error_kind == "rate_limit" and outcome.attempts == 3
    assert outcome.attempt_errors == ("transient: 503", "rate_limit: 429")
