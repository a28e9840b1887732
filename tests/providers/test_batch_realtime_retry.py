"""Batch replies rejected by their parser get their remaining attempts in real time, with the
correction turn and a new seed / warmer temperature, counting the batch call as attempt 1; the
run's quota holds across the batch and the real-time calls."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from coeval.config.credentials import KeyStore
from coeval.config.model import Config, ExperimentConfig, ModelConfig
from coeval.interfaces.base import GenerateRequest, GenerateResult, Interface
from coeval.plugins.manager import registries
from coeval.prompts.errors import OutputParseError
from coeval.scheduler import Scheduler, SchedulerLimits, WorkItem, WorkOutcome
from coeval.scheduler.batching import PendingStore, PollPolicy, ProviderBatchExecutor
from coeval.scheduler.batching.watch import BatchWatch
from coeval.scheduler.resample import retry_seed
from coeval.storage.run_folder import RunFolder
from coeval_testing.fake_server._core import count_tokens
from coeval_testing.fake_server._junk import BATCH_JUNK_TEXT

from tests.providers.conftest import model_and_credentials

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

FAST = PollPolicy(interval_s=0.01, max_interval_s=0.02)
PHASE = "evaluation"


def rejecting_prose(result: GenerateResult) -> str:
    """The fake's real replies start with ``Reply``; its batch junk is prose."""
    if not result.text.startswith("Reply "):
        raise OutputParseError(f"no score in the reply: {result.text[:40]!r}")
    return result.text


def rejecting_all(result: GenerateResult) -> str:
    raise OutputParseError("no score in the reply")


def setup(fake: Any, tmp_path: Path, retries: int = 2) -> tuple[Config, KeyStore, RunFolder, ModelConfig, Interface]:
    model, creds = model_and_credentials("openai", fake.url, tmp_path, temperature=0)
    config = Config(models=(model,), tasks=(),
                    experiment=ExperimentConfig(id="batch-retry", storage_folder=str(tmp_path), generation_retries=retries))
    run = RunFolder(tmp_path / "run")
    run.root.mkdir()
    iface = registries().interfaces.get("openai")(model, creds)
    return config, KeyStore.load(str(tmp_path / "keys.yaml")), run, model, iface


def items(model: ModelConfig, n: int, outcomes: list[WorkOutcome], parse: Any) -> list[WorkItem]:
    return [WorkItem(key=f"t__{model.name}__{i:05d}", phase=PHASE, model=model,
                     request=GenerateRequest(prompt=f"Score answer {i}.", params=model.params_for("student")),
                     on_done=outcomes.append, parse=parse) for i in range(n)]


def executor(config: Config, keys: KeyStore, run: RunFolder, iface: Interface, **kw: Any) -> ProviderBatchExecutor:
    return ProviderBatchExecutor(run=run, config=config, keys=keys, enabled=lambda m, p: True, poll=FAST,
                         registries=registries(), interfaces={config.models[0].name: iface}, **kw)


def test_rejected_batch_replies_end_ok_after_a_corrected_resampled_real_time_retry(fake: Any, tmp_path: Path) -> None:
    config, keys, run, model, iface = setup(fake, tmp_path)
    fake.configure(batch_junk_lines=2)  # the job's first two lines come back as prose
    outcomes: list[WorkOutcome] = []
    todo = items(model, 4, outcomes, rejecting_prose)
    console: list[str] = []
    ex = executor(config, keys, run, iface, watch=BatchWatch(say=console.append))
    asyncio.run(ex.run(PHASE, todo, outcomes.append))

    assert fake.counts["openai.batches.create"] == 1 and fake.counts["openai.chat"] == 2
    by_key = {o.item.key: o for o in outcomes}
    assert sorted(by_key) == sorted(i.key for i in todo) and len(outcomes) == 4
    assert all(o.status == "ok" for o in outcomes)
    assert all(o.item in todo for o in outcomes)  # outcomes name the items the executor was given
    assert [by_key[i.key].attempts for i in todo] == [2, 2, 1, 1]
    assert ex.retried_in_real_time == 2
    assert console[-1] == ("evaluation: 2 openai-model batch replies failed their parse and were retried in real "
                           "time (real-time price): 2 ok, 0 failed")
    [job] = fake.state.jobs.values()
    assert [body.get("temperature") for _, body in job.requests] == [0, 0, 0, 0]
    assert all("seed" not in body for _, body in job.requests)
    chats = {e["prompt"]: e for e in fake.requests("openai.chat")}
    for i, item in enumerate(todo[:2]):
        reason = f"no score in the reply: {BATCH_JUNK_TEXT!r}"
        prompt = (f"Score answer {i}.\n\nYour previous reply (item {item.key}) was rejected: {reason}\n"
                  "Reply again, fixing this.")
        assert prompt in chats  # the correction turn reached the server
        sent = chats[prompt]
        assert sent["sampling"] == {"temperature": 0.2, "seed": retry_seed(None, item.key, 1)}
        done = by_key[item.key]
        assert done.attempt_errors == (f"unparseable: {reason}",)
        assert done.raw is not None and done.raw == done.value and done.raw.startswith("Reply ")
        # both calls are in the record: the junk batch reply's tokens plus the retry's
        assert done.usage.output_tokens == count_tokens(BATCH_JUNK_TEXT) + sent["output_tokens"]
        assert done.usage.input_tokens == count_tokens(f"Score answer {i}.") + sent["input_tokens"]
    assert PendingStore(run).load() == []


def test_retries_stop_at_generation_retries_and_count_every_call(fake: Any, tmp_path: Path) -> None:
    config, keys, run, model, iface = setup(fake, tmp_path, retries=2)
    outcomes: list[WorkOutcome] = []
    todo = items(model, 3, outcomes, rejecting_all)
    asyncio.run(executor(config, keys, run, iface).run(PHASE, todo, outcomes.append))

    assert fake.counts["openai.chat"] == 3 * 2  # two real-time retries each after the batch call
    assert [o.status for o in outcomes] == ["failed"] * 3
    assert {o.attempts for o in outcomes} == {3}
    assert {o.error_kind for o in outcomes} == {"unparseable"}
    assert {o.attempt_errors for o in outcomes} == {("unparseable: no score in the reply",) * 3}
    seeds = {(e["sampling"]["seed"], e["sampling"]["temperature"]) for e in fake.requests("openai.chat")}
    assert seeds == {(retry_seed(None, i.key, n), t) for i in todo for n, t in ((1, 0.2), (2, 0.4))}
    assert PendingStore(run).load() == []


def test_no_retries_configured_keeps_the_batch_reply(fake: Any, tmp_path: Path) -> None:
    config, keys, run, model, iface = setup(fake, tmp_path, retries=0)
    outcomes: list[WorkOutcome] = []
    ex = executor(config, keys, run, iface)
    asyncio.run(ex.run(PHASE, items(model, 2, outcomes, rejecting_all), outcomes.append))
    assert fake.counts.get("openai.chat", 0) == 0 and ex.retried_in_real_time == 0
    assert [(o.status, o.error_kind, o.attempts) for o in outcomes] == [("failed", "unparseable", 1)] * 2


def test_real_time_retries_respect_the_run_quota(fake: Any, tmp_path: Path) -> None:
    """The run's scheduler hands the items over (one call each reserved); the retries draw on
    the same quota: 4 batch calls + 1 retry = the quota of 5, the others keep their batch record."""
    config, keys, run, model, iface = setup(fake, tmp_path)
    fake.configure(batch_junk_lines=4)
    ex = executor(config, keys, run, iface)
    scheduler = Scheduler({model.name: iface}, SchedulerLimits(generation_retries=2, quota={model.name: 5}),
                          batch_executor=ex)
    outcomes: list[WorkOutcome] = []
    stats = asyncio.run(scheduler.run(PHASE, items(model, 4, outcomes, rejecting_prose)))

    assert fake.counts["openai.chat"] == 1 and scheduler.calls[model.name] == 5
    assert sorted((o.status, o.attempts) for o in outcomes) == [("failed", 1)] * 3 + [("ok", 2)]
    assert {o.error_kind for o in outcomes if o.status == "failed"} == {"unparseable"}
    assert (stats.ok, stats.failed, stats.skipped) == (1, 3, 0)
    assert sum(o.attempts for o in outcomes) == 5  # what the ledger adds to meta.json's calls
    assert PendingStore(run).load() == []


def test_a_parser_that_crashes_is_not_retried(fake: Any, tmp_path: Path) -> None:
    config, keys, run, model, iface = setup(fake, tmp_path)

    def crashing(result: GenerateResult) -> Any:
        raise KeyError("score")

    outcomes: list[WorkOutcome] = []
    asyncio.run(executor(config, keys, run, iface).run(PHASE, items(model, 1, outcomes, crashing), outcomes.append))
    assert fake.counts.get("openai.chat", 0) == 0
    assert [(o.error_kind, o.attempts) for o in outcomes] == [("parse_error", 1)]


def test_first_ctrl_c_records_the_batch_reply_without_new_calls(fake: Any, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    config, keys, run, model, iface = setup(fake, tmp_path)
    fake.configure(batch_junk_lines=1)
    ex = executor(config, keys, run, iface)
    outcomes: list[WorkOutcome] = []
    todo = items(model, 2, outcomes, rejecting_prose)
    original = ex._collect

    async def collect_after_stop(*args: Any) -> None:
        ex.stop_waiting()
        await original(*args)

    monkeypatch.setattr(ex, "_collect", collect_after_stop)
    asyncio.run(ex.run(PHASE, todo, outcomes.append))
    assert fake.counts.get("openai.chat", 0) == 0
    assert sorted((o.status, o.attempts) for o in outcomes) == [("failed", 1), ("ok", 1)]
    assert PendingStore(run).load() == []


def test_no_retry_starts_once_the_budget_is_spent(fake: Any, tmp_path: Path) -> None:
    """The batch replies already spent the (tiny) budget: the rejected ones keep their
    batch record, with no real-time call."""
    config, keys, run, model, iface = setup(fake, tmp_path)
    fake.configure(batch_junk_lines=2)
    ex = executor(config, keys, run, iface)
    scheduler = Scheduler({model.name: iface}, SchedulerLimits(generation_retries=2, budget_usd=1e-6),
                          batch_executor=ex)
    outcomes: list[WorkOutcome] = []
    stats = asyncio.run(scheduler.run(PHASE, items(model, 3, outcomes, rejecting_prose)))

    assert fake.counts.get("openai.chat", 0) == 0
    assert sorted((o.status, o.error_kind, o.attempts) for o in outcomes) == [
        ("failed", "unparseable", 1), ("failed", "unparseable", 1), ("ok", None, 1)]
    assert all(o.cost_usd and o.cost_usd > 0 for o in outcomes)  # the paid batch calls stay accounted
    assert (stats.ok, stats.failed) == (1, 2) and scheduler.calls[model.name] == 3
