"""The scheduler: retries, bounds, quota, budget, cancellation, adaptive concurrency."""

from __future__ import annotations

import asyncio
import json
import random

import pytest
from coeval.config.model import ModelConfig
from coeval.interfaces.base import GenerateResult, OverloadedError, TransientModelError
from coeval.interfaces.mock import MockInterface
from coeval.prompts.errors import OutputParseError
from coeval.scheduler import (
    ManualClock,
    RetryPolicy,
    Scheduler,
    SchedulerLimits,
)

from .scheduler_helpers import Recorder, ScriptedInterface, fatal, make_items, rate_limited, transient


def run(coro):
    return asyncio.run(coro)


def test_every_item_reported_exactly_once_with_its_value():
    iface = ScriptedInterface(delay=0.001)
    rec = Recorder()
    items = make_items(iface, 200, rec)
    stats = run(Scheduler({"m": iface}).run("evaluation", items))
    assert len(rec.outcomes) == 200
    assert stats.ok == 200 and stats.failed == 0 and stats.skipped == 0
    assert stats.total == 200 and stats.phase_calls == 200
    assert all(o.value == f"ok:{o.item.request.prompt}" and o.attempts == 1 for o in rec.outcomes.values())


def test_retry_after_is_honoured_and_pauses_the_connection():
    clock = ManualClock()
    iface = ScriptedInterface(script={"p0": [rate_limited(retry_after=7.0)]})
    rec = Recorder()
    stats = run(Scheduler({"m": iface}, clock=clock).run("evaluation", make_items(iface, 1, rec)))
    outcome = rec.outcomes["m:p0"]
    assert outcome.status == "ok" and outcome.attempts == 2
    assert 7.0 in clock.sleeps
    assert stats.retries["rate_limit"] == 1
    assert stats.lanes["scripted:m"].pauses == 1


def test_backoff_is_exponential_with_jitter():
    clock = ManualClock()
    iface = ScriptedInterface(script={"p0": [transient(), transient(), transient()]})
    rec = Recorder()
    limits = SchedulerLimits(max_attempts=6, retry=RetryPolicy(base_delay_s=1.0, max_delay_s=30.0))
    run(Scheduler({"m": iface}, limits, clock=clock, rng=random.Random(1)).run("evaluation", make_items(iface, 1, rec)))
    assert rec.outcomes["m:p0"].status == "ok"
    assert rec.outcomes["m:p0"].attempts == 4
    waits = clock.sleeps
    assert len(waits) == 3
    for n, wait in enumerate(waits):
        nominal = 1.0 * 2**n
        assert nominal / 2 <= wait <= nominal  # equal jitter: half fixed, half random


def test_backoff_is_capped():
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=4.0)
    rng = random.Random(0)
    assert all(policy.backoff(n, rng) <= 4.0 for n in range(1, 30))


def test_fatal_errors_are_not_retried():
    iface = ScriptedInterface(script={"p0": [fatal()]})
    rec = Recorder()
    stats = run(Scheduler({"m": iface}, clock=ManualClock()).run("evaluation", make_items(iface, 1, rec)))
    outcome = rec.outcomes["m:p0"]
    assert outcome.status == "failed" and outcome.error_kind == "fatal" and outcome.attempts == 1
    assert "401" in (outcome.error or "")
    assert iface.total_calls == 1
    assert stats.failures["fatal"] == 1


def test_attempts_are_bounded_and_recorded():
    iface = ScriptedInterface(default=lambda prompt, n: transient())
    rec = Recorder()
    limits = SchedulerLimits(max_attempts=4)
    stats = run(Scheduler({"m": iface}, limits, clock=ManualClock()).run("evaluation", make_items(iface, 3, rec)))
    for outcome in rec.outcomes.values():
        assert outcome.status == "failed"
        assert outcome.error_kind == "transient"
        assert outcome.attempts == 4
    assert iface.total_calls == 12
    assert stats.max_attempts_seen == 4


def test_a_retry_after_beyond_the_limit_fails_the_item_with_a_reason():
    iface = ScriptedInterface(script={"p0": [rate_limited(retry_after=86400)]})
    rec = Recorder()
    run(Scheduler({"m": iface}, clock=ManualClock()).run("evaluation", make_items(iface, 1, rec)))
    outcome = rec.outcomes["m:p0"]
    assert outcome.status == "failed" and outcome.error_kind == "rate_limit"
    assert "86400" in (outcome.error or "")
    assert iface.total_calls == 1


def test_generation_retries_bound_unparseable_output():
    def parse(result: GenerateResult):
        try:
            return json.loads(result.text)
        except ValueError as exc:
            raise OutputParseError(f"not JSON: {result.text[:20]}") from exc

    good = '{"score": "High"}'
    iface = ScriptedInterface(
        script={
            "p0": ["nonsense", "still nonsense", good],  # two bad replies, then a good one
            "p1": ["x", "y", "z", good],  # three bad replies: one too many
        }
    )
    rec = Recorder()
    limits = SchedulerLimits(generation_retries=2)
    stats = run(Scheduler({"m": iface}, limits).run("evaluation", make_items(iface, 2, rec, parse=parse)))
    assert rec.outcomes["m:p0"].status == "ok"
    assert rec.outcomes["m:p0"].value == {"score": "High"}
    assert rec.outcomes["m:p0"].attempts == 3
    failed = rec.outcomes["m:p1"]
    assert failed.status == "failed" and failed.error_kind == "unparseable" and failed.attempts == 3
    assert "not JSON" in (failed.error or "")
    assert iface.calls["p1"] == 3
    assert stats.retries["unparseable"] == 4


def test_quota_is_exact_under_concurrency_even_with_retries():
    # every third call fails transiently: retries consume quota too
    iface = ScriptedInterface(
        delay=0.002,
        default=lambda prompt, n: transient() if (int(prompt[1:]) + n) % 3 == 0 else None,
        default_concurrency=16,
        max_concurrency=64,
    )
    other = ScriptedInterface(name="other", delay=0.001)
    rec = Recorder()
    items = make_items(iface, 120, rec) + make_items(other, 30, rec)
    limits = SchedulerLimits(quota={"m": 37}, retry=RetryPolicy(base_delay_s=0.001, max_delay_s=0.002))
    stats = run(Scheduler({"m": iface, "other": other}, limits).run("evaluation", items))
    assert iface.total_calls == 37
    assert stats.calls["m"] == 37
    by_model = [o for o in rec.outcomes.values() if o.item.model.name == "m"]
    assert len(by_model) == 120
    assert all(o.status in ("ok", "failed", "skipped") for o in by_model)
    assert sum(o.status == "skipped" and o.error_kind == "quota" for o in by_model) > 0
    # the unlimited model is untouched by the other's quota
    assert all(rec.outcomes[f"other:p{i}"].status == "ok" for i in range(30))


def test_quota_carries_over_calls_made_before():
    iface = ScriptedInterface()
    rec = Recorder()
    limits = SchedulerLimits(quota={"m": 10}, calls_before={"m": 7})
    stats = run(Scheduler({"m": iface}, limits).run("evaluation", make_items(iface, 5, rec)))
    assert iface.total_calls == 3
    assert stats.ok == 3 and stats.skips["quota"] == 2


def test_quota_holds_across_phases_of_one_scheduler():
    iface = ScriptedInterface()
    rec = Recorder()
    scheduler = Scheduler({"m": iface}, SchedulerLimits(quota={"m": 5}))
    run(scheduler.run("response_collection", make_items(iface, 3, rec, prefix="a")))
    stats = run(scheduler.run("evaluation", make_items(iface, 3, rec, prefix="b")))
    assert iface.total_calls == 5
    assert stats.ok == 2 and stats.skips["quota"] == 1
    assert scheduler.quota_left("m") == 0


def test_budget_stops_new_calls():
    iface = ScriptedInterface(cost=0.01, default_concurrency=1, max_concurrency=1)
    rec = Recorder()
    limits = SchedulerLimits(budget_usd=0.1)
    stats = run(Scheduler({"m": iface}, limits).run("evaluation", make_items(iface, 30, rec)))
    assert iface.total_calls == 10
    assert stats.ok == 10 and stats.skips["budget"] == 20
    assert stats.spend_usd == pytest.approx(0.1)
    assert all(o.cost_usd == pytest.approx(0.01) for o in rec.outcomes.values() if o.status == "ok")


def test_budget_under_concurrency_only_overshoots_by_calls_in_flight():
    iface = ScriptedInterface(cost=0.01, delay=0.002, default_concurrency=8, max_concurrency=8)
    rec = Recorder()
    stats = run(Scheduler({"m": iface}, SchedulerLimits(budget_usd=0.1)).run("evaluation", make_items(iface, 100, rec)))
    assert 10 <= iface.total_calls <= 10 + 8
    assert stats.skips["budget"] == 100 - iface.total_calls


def test_cancel_lets_calls_in_flight_finish_and_skips_the_rest():
    iface = ScriptedInterface(delay=0.005, default_concurrency=4, max_concurrency=4)
    rec = Recorder()
    items = make_items(iface, 100, rec)

    async def main():
        scheduler = Scheduler({"m": iface})
        task = asyncio.ensure_future(scheduler.run("evaluation", items))
        while len(rec.outcomes) < 10:
            await asyncio.sleep(0.001)
        scheduler.cancel()
        return await task

    stats = run(main())
    assert len(rec.outcomes) == 100
    assert stats.cancelled
    ok = [o for o in rec.outcomes.values() if o.status == "ok"]
    skipped = [o for o in rec.outcomes.values() if o.status == "skipped"]
    assert len(ok) + len(skipped) == 100
    assert all(o.error_kind == "cancelled" for o in skipped)
    # every call that was made finished and was recorded: nothing paid for was lost
    assert len(ok) == iface.total_calls
    assert 10 <= len(ok) < 100


def test_cancelling_the_task_reports_every_item_and_reraises():
    iface = ScriptedInterface(delay=0.01, default_concurrency=4, max_concurrency=4)
    rec = Recorder()
    items = make_items(iface, 50, rec)

    async def main():
        task = asyncio.ensure_future(Scheduler({"m": iface}).run("evaluation", items))
        while len(rec.outcomes) < 8:
            await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main())
    assert len(rec.outcomes) == 50
    statuses = rec.by_status()
    assert statuses["ok"] >= 8
    assert statuses["ok"] + statuses["skipped"] == 50
    assert all(o.error_kind == "cancelled" for o in rec.outcomes.values() if o.status == "skipped")


def test_concurrency_grows_while_calls_succeed():
    iface = ScriptedInterface(delay=0.002, default_concurrency=2, max_concurrency=24)
    rec = Recorder()
    stats = run(Scheduler({"m": iface}).run("evaluation", make_items(iface, 400, rec)))
    lane = stats.lanes["scripted:m"]
    assert lane.limit == 24
    assert lane.counters.increases > 0
    assert iface.peak_in_flight == 24 == lane.peak_in_flight


def _crowded_server(error: Exception, room: int = 6) -> ScriptedInterface:
    """A server that answers ``error`` whenever more than ``room`` calls are in flight."""

    class Crowded(ScriptedInterface):
        async def generate(self, request):
            if self.in_flight >= room:
                self.calls[request.prompt] += 1
                raise error
            return await super().generate(request)

    return Crowded(delay=0.002, default_concurrency=16, max_concurrency=32)


# a provider that throttles (429), or a gateway with a bounded queue (503), past 6 calls at
# once: each refusal is a request wasted, so the lane must send fewer at once
@pytest.mark.parametrize(("error", "kind"), [(rate_limited(None), "rate_limit"),
                                             (OverloadedError("HTTP 503 server overloaded"), "transient")])
def test_concurrency_shrinks_on_rate_limits_and_overload(error: Exception, kind: str) -> None:
    iface = _crowded_server(error)
    rec = Recorder()
    limits = SchedulerLimits(max_attempts=50, retry=RetryPolicy(base_delay_s=0.001, max_delay_s=0.01))
    stats = run(Scheduler({"m": iface}, limits).run("evaluation", make_items(iface, 300, rec)))
    lane = stats.lanes["scripted:m"]
    assert stats.ok == 300
    assert lane.counters.decreases > 0
    assert lane.counters.lowest < 16
    assert stats.retries[kind] > 0
    assert iface.total_calls < 1.1 * 300  # few refusals once the lane has shrunk


def test_a_plain_server_error_leaves_the_concurrency_alone() -> None:
    iface = _crowded_server(TransientModelError("HTTP 500"))
    limits = SchedulerLimits(max_attempts=50, retry=RetryPolicy(base_delay_s=0.001, max_delay_s=0.01))
    stats = run(Scheduler({"m": iface}, limits).run("evaluation", make_items(iface, 300, Recorder())))
    assert stats.ok == 300
    assert stats.lanes["scripted:m"].counters.decreases == 0


def test_lanes_are_per_connection_not_per_model():
    shared_a = ScriptedInterface(name="a", key="openai:key1", delay=0.002, default_concurrency=3, max_concurrency=3)
    shared_b = ScriptedInterface(name="b", key="openai:key1", delay=0.002, default_concurrency=3, max_concurrency=3)
    rec = Recorder()
    items = make_items(shared_a, 30, rec) + make_items(shared_b, 30, rec)
    stats = run(Scheduler({"a": shared_a, "b": shared_b}).run("evaluation", items))
    assert list(stats.lanes) == ["openai:key1"]
    assert shared_a.peak_in_flight + shared_b.peak_in_flight <= 6
    assert stats.lanes["openai:key1"].peak_in_flight == 3


def test_mock_with_transient_errors_and_unparseable_replies_completes_every_item():
    model = ModelConfig(
        name="judge",
        interface="mock",
        parameters={"failure_rate": 0.2, "malformed_rate": 0.05, "seed": 3, "retry_after_s": 0},
    )
    iface = MockInterface(model)
    schema = {
        "type": "object",
        "properties": {"accuracy": {"enum": ["High", "Medium", "Low"]}},
        "required": ["accuracy"],
        "additionalProperties": False,
    }

    def parse(result: GenerateResult):
        try:
            value = json.loads(result.text)
        except ValueError as exc:
            raise OutputParseError("unparseable judge reply") from exc
        if value.get("accuracy") not in ("High", "Medium", "Low"):
            raise OutputParseError("missing score")
        return value

    from coeval.interfaces.base import GenerateRequest
    from coeval.scheduler import WorkItem

    rec = Recorder()
    items = [
        WorkItem(
            key=f"e{i}",
            phase="evaluation",
            model=model,
            request=GenerateRequest(prompt=f"judge answer {i}", params=model.parameters, json_schema=schema,
                                    schema_name="judge_single"),
            on_done=rec,
            parse=parse,
        )
        for i in range(600)
    ]
    limits = SchedulerLimits(max_attempts=5, generation_retries=2, retry=RetryPolicy(base_delay_s=0.0005, max_delay_s=0.002))
    stats = run(Scheduler({"judge": iface}, limits).run("evaluation", items))
    assert stats.ok == 600, (stats.failures, stats.skips)
    assert max(o.attempts for o in rec.outcomes.values()) <= 5
    assert stats.retries["transient"] > 50  # the faults were really injected ...
    assert stats.retries["unparseable"] > 5  # ... and so were the bad replies
    assert iface.calls == stats.phase_calls


def test_on_done_errors_stop_the_phase_and_are_reraised():
    iface = ScriptedInterface(delay=0.001)
    seen: list[str] = []

    def on_done(outcome):
        seen.append(outcome.item.key)
        if outcome.status == "ok" and len(seen) == 5:
            raise OSError(28, "No space left on device")

    items = make_items(iface, 60, Recorder())
    items = [type(i)(key=i.key, phase=i.phase, model=i.model, request=i.request, on_done=on_done) for i in items]

    async def main():
        return await Scheduler({"m": iface}).run("evaluation", items)

    with pytest.raises(OSError, match="No space left"):
        run(main())
    assert sorted(seen) == sorted(i.key for i in items)  # still exactly once each
    assert iface.total_calls < 60


def test_parser_bugs_fail_their_item_not_the_run():
    iface = ScriptedInterface()
    rec = Recorder()

    def parse(result):
        if result.text.endswith("p1"):
            raise KeyError("boom")
        return result.text

    stats = run(Scheduler({"m": iface}).run("evaluation", make_items(iface, 3, rec, parse=parse)))
    assert stats.ok == 2 and stats.failures["parse_error"] == 1


def test_items_for_models_without_interface_fail_clearly():
    iface = ScriptedInterface()
    rec = Recorder()
    items = make_items(iface, 2, rec, model_name="ghost")
    stats = run(Scheduler({"m": iface}).run("evaluation", items))
    assert stats.failed == 2
    assert "ghost" in (rec.outcomes["ghost:p0"].error or "")


def test_secrets_are_redacted_from_errors():
    from coeval.config.credentials import register_secret
    from coeval.interfaces.base import FatalModelError

    secret = "sk-test-SECRET-0123456789"
    register_secret(secret)
    iface = ScriptedInterface(script={"p0": [FatalModelError(f"bad key {secret}")]})
    rec = Recorder()
    run(Scheduler({"m": iface}).run("evaluation", make_items(iface, 1, rec)))
    assert secret not in (rec.outcomes["m:p0"].error or "")


def test_a_call_that_hangs_times_out_and_is_retried():
    class Hangs(ScriptedInterface):
        async def generate(self, request):
            if self.calls[request.prompt] == 0:
                self.calls[request.prompt] += 1
                await asyncio.sleep(10)
            return await super().generate(request)

    iface = Hangs()
    rec = Recorder()
    limits = SchedulerLimits(call_timeout_s=0.05, retry=RetryPolicy(base_delay_s=0.001))
    run(Scheduler({"m": iface}, limits).run("evaluation", make_items(iface, 1, rec)))
    outcome = rec.outcomes["m:p0"]
    assert outcome.status == "ok" and outcome.attempts == 2


def test_a_retry_after_an_unparseable_reply_tells_the_model_why():
    def parse(result: GenerateResult):
        if result.text.startswith("bad"):
            raise OutputParseError("no JSON found")
        return result.text

    iface = ScriptedInterface(script={"p0": ["bad reply", "good"]})
    seen: list[str] = []
    original = iface.generate

    async def spy(request):
        seen.append(request.prompt)
        return await original(request)

    iface.generate = spy  # type: ignore[method-assign]
    rec = Recorder()
    run(Scheduler({"m": iface}, SchedulerLimits(generation_retries=2)).run("evaluation", make_items(iface, 1, rec, parse=parse)))
    assert rec.outcomes["m:p0"].status == "ok"
    assert seen == ["p0", "p0\n\nYour previous reply (item m:p0) was rejected: no JSON found\nReply again, fixing this."]
