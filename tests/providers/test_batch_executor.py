"""The batch executor: one job per model, job ids persisted before polling, resume without a
second submission, failures as failed outcomes, small Bedrock groups in real time."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import attrs
import pytest
from coeval.config.credentials import KeyStore
from coeval.config.model import Config, ExperimentConfig, ModelConfig
from coeval.interfaces.base import GenerateRequest, GenerateResult
from coeval.plugins.manager import registries
from coeval.prompts.errors import OutputParseError
from coeval.scheduler import WorkItem, WorkOutcome
from coeval.scheduler.batching import PendingStore, PollPolicy, ProviderBatchExecutor
from coeval.storage.run_folder import RunFolder

from tests.providers.conftest import model_and_credentials, provider_setup, write_keys

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

FAST = PollPolicy(interval_s=0.01, max_interval_s=0.02)


def setup(name: str, fake: Any, tmp_path: Path, *, n_models: int = 1, **params: Any) -> tuple[Config, KeyStore, RunFolder]:
    base, entry, _ = provider_setup(name, fake.url)
    keys = KeyStore.load(write_keys(tmp_path, {name: entry}))
    models = tuple(
        ModelConfig(name=f"{name}-{i}", interface=name, roles=("student",), parameters={**base, "max_tokens": 32, **params})
        for i in range(n_models)
    )
    config = Config(models=models, tasks=(), experiment=ExperimentConfig(id="batch-test", storage_folder=str(tmp_path)))
    run = RunFolder(tmp_path / "run")
    run.root.mkdir()
    return config, keys, run


def items_for(config: Config, n: int, outcomes: list[WorkOutcome], parse: Any = None) -> list[WorkItem]:
    out = []
    for model in config.models:
        for i in range(n):
            out.append(WorkItem(key=f"task__{model.name}__{i:05d}", phase="response_collection", model=model,
                                request=GenerateRequest(prompt=f"q{i} for {model.name}", params=model.params_for("student")),
                                on_done=outcomes.append, parse=parse))
    return out


def executor(config: Config, keys: KeyStore, run: RunFolder, **kw: Any) -> ProviderBatchExecutor:
    return ProviderBatchExecutor(run=run, config=config, keys=keys, enabled=lambda m, p: True, poll=FAST,
                         registries=registries(), **kw)


def run_items(ex: ProviderBatchExecutor, items: list[WorkItem], outcomes: list[WorkOutcome]) -> None:
    asyncio.run(ex.run("response_collection", [i for i in items if ex.wants(i)], outcomes.append))


@pytest.mark.slow
def test_one_job_per_model_and_every_item_answered(fake: Any, tmp_path: Path) -> None:
    config, keys, run = setup("openai", fake, tmp_path, n_models=2)
    outcomes: list[WorkOutcome] = []
    items = items_for(config, 5, outcomes)
    ex = executor(config, keys, run)
    run_items(ex, items, outcomes)
    assert fake.counts["openai.batches.create"] == 2  # never two models in one job
    assert sorted({job.model for job in fake.state.jobs.values()}) == ["gpt-4o-mini"]
    assert all(len(job.requests) == 5 for job in fake.state.jobs.values())
    assert sorted(o.item.key for o in outcomes) == sorted(i.key for i in items)
    assert all(o.status == "ok" and o.attempts == 1 and o.usage.output_tokens > 0 for o in outcomes)
    assert not (run.root / "pending_batches.json").exists()  # collected jobs leave the file
    assert fake.counts.get("openai.chat", 0) == 0  # no real-time calls


def test_job_is_persisted_before_the_first_poll(fake: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config, keys, run = setup("anthropic", fake, tmp_path)
    outcomes: list[WorkOutcome] = []
    items = items_for(config, 3, outcomes)
    ex = executor(config, keys, run)
    seen: list[dict[str, Any]] = []
    runner = ex.runner_for(config.models[0])
    original = runner.poll

    async def poll(job_id: str) -> Any:
        seen.append(json.loads((run.root / "pending_batches.json").read_text()))
        return await original(job_id)

    monkeypatch.setattr(runner, "poll", poll)
    run_items(ex, items, outcomes)
    first = seen[0]["jobs"][0]
    assert first["model"] == config.models[0].name and first["phase"] == "response_collection"
    assert sorted(first["items"].values()) == sorted(i.key for i in items)
    assert len(outcomes) == 3 and all(o.status == "ok" for o in outcomes)


@pytest.mark.parametrize("name", ["openai", "anthropic", "gemini", "mistral"])
def test_crash_after_submit_then_resume_collects_without_resubmitting(name: str, fake: Any, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    config, keys, run = setup(name, fake, tmp_path)
    outcomes: list[WorkOutcome] = []
    items = items_for(config, 4, outcomes)
    crashing = executor(config, keys, run)
    runner = crashing.runner_for(config.models[0])

    async def crash(job_id: str) -> Any:
        raise asyncio.CancelledError  # the process dies while polling

    monkeypatch.setattr(runner, "poll", crash)
    with pytest.raises(asyncio.CancelledError):
        run_items(crashing, items, outcomes)
    assert outcomes == []
    pending = PendingStore(run).load()
    assert len(pending) == 1
    # a new process: same items (the phase rebuilds them), a fresh executor
    resumed: list[WorkOutcome] = []
    items_again = items_for(config, 4, resumed)
    run_items(executor(config, keys, run), items_again, resumed)
    create = {"openai": "openai.batches.create", "anthropic": "anthropic.batches.create",
              "gemini": "gemini.batches.create", "mistral": "mistral.batch.create"}[name]
    assert fake.counts[create] == 1  # exactly one submission in total
    assert sorted(o.item.key for o in resumed) == sorted(i.key for i in items)
    assert all(o.status == "ok" for o in resumed)
    assert PendingStore(run).load() == []


def test_failed_lines_and_expired_jobs_become_failed_outcomes(fake: Any, tmp_path: Path) -> None:
    config, keys, run = setup("openai", fake, tmp_path)
    fake.configure(batch_outcome="expired", batch_done_before_expiry=2)
    outcomes: list[WorkOutcome] = []
    run_items(executor(config, keys, run), items_for(config, 5, outcomes), outcomes)
    by_status = sorted(o.status for o in outcomes)
    assert by_status == ["failed", "failed", "failed", "ok", "ok"]
    failed = [o for o in outcomes if o.status == "failed"]
    assert all(o.error_kind == "transient" and "expired" in o.error for o in failed)
    assert PendingStore(run).load() == []  # settled: --continue retries these as missing/failed records


def test_failed_job_fails_every_item_with_its_message(fake: Any, tmp_path: Path) -> None:
    config, keys, run = setup("openai", fake, tmp_path)
    fake.configure(batch_outcome="failed")
    outcomes: list[WorkOutcome] = []
    run_items(executor(config, keys, run), items_for(config, 3, outcomes), outcomes)
    assert [o.status for o in outcomes] == ["failed"] * 3
    assert all("failed" in o.error for o in outcomes)


def test_unparseable_batch_reply_is_a_failed_record_not_a_guess(fake: Any, tmp_path: Path) -> None:
    config, keys, run = setup("openai", fake, tmp_path)

    def parse(result: GenerateResult) -> Any:
        raise OutputParseError("no score in reply")

    outcomes: list[WorkOutcome] = []
    run_items(executor(config, keys, run), items_for(config, 2, outcomes, parse=parse), outcomes)
    assert [o.error_kind for o in outcomes] == ["unparseable", "unparseable"]
    assert all(o.usage.input_tokens > 0 for o in outcomes)  # the paid call is still accounted


def test_job_running_past_the_deadline_stays_pending(fake: Any, tmp_path: Path) -> None:
    config, keys, run = setup("openai", fake, tmp_path, batch_deadline_s=0)
    fake.configure(batch_polls_to_complete=100)
    outcomes: list[WorkOutcome] = []
    ex = executor(config, keys, run)
    run_items(ex, items_for(config, 3, outcomes), outcomes)
    assert outcomes == []  # nothing reported: the scheduler marks them batch_pending
    assert len(ex.left_pending) == 1 and len(PendingStore(run).load()) == 1


def test_small_bedrock_group_runs_in_real_time(fake: Any, tmp_path: Path) -> None:
    config, keys, run = setup("bedrock", fake, tmp_path)
    model, creds = model_and_credentials("bedrock", fake.url, tmp_path)
    model = attrs.evolve(model, name=config.models[0].name)
    iface = registries().interfaces.get("bedrock")(model, creds)
    outcomes: list[WorkOutcome] = []
    items = items_for(config, 3, outcomes)
    ex = executor(config, keys, run, interfaces={model.name: iface})
    run_items(ex, items, outcomes)
    assert fake.counts.get("bedrock.jobs.create", 0) == 0
    assert fake.counts["bedrock.converse"] == 3
    assert sorted(o.item.key for o in outcomes) == sorted(i.key for i in items)
    assert all(o.status == "ok" for o in outcomes)
    assert all(o.item in items for o in outcomes)  # outcomes name the items the scheduler gave


def test_bedrock_job_of_enough_items_goes_through_s3(fake: Any, tmp_path: Path) -> None:
    config, keys, run = setup("bedrock", fake, tmp_path)
    outcomes: list[WorkOutcome] = []
    run_items(executor(config, keys, run), items_for(config, 100, outcomes), outcomes)
    assert fake.counts["bedrock.jobs.create"] == 1 and fake.counts["s3.put"] == 1
    assert len(outcomes) == 100 and all(o.status == "ok" for o in outcomes)


def test_only_enabled_models_with_a_runner_are_wanted(fake: Any, tmp_path: Path) -> None:
    config, keys, run = setup("openai", fake, tmp_path, n_models=2)
    mock = ModelConfig(name="m", interface="mock", roles=("student",))
    ex = ProviderBatchExecutor(run=run, config=config, keys=keys, poll=FAST, registries=registries(),
                       enabled=lambda m, p: m.name != "openai-1" and p == "response_collection")
    outcomes: list[WorkOutcome] = []
    a, b = items_for(config, 1, outcomes)
    other = WorkItem(key="k", phase="response_collection", model=mock, request=GenerateRequest(prompt="x"),
                     on_done=outcomes.append)
    assert ex.wants(a) and not ex.wants(b) and not ex.wants(other)
    assert not ex.wants(attrs.evolve(a, phase="evaluation"))


@pytest.mark.parametrize("problem", ["no key", "wrong key"])
def test_credentials_problem_while_polling_keeps_the_paid_job_pending(problem: str, fake: Any, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """`status --fetch-batches` or `--continue` run without the key (or with a wrong one) must not
    drop a job the provider is running: fixing the key then collects it, with no second job."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config, keys, run = setup("openai", fake, tmp_path, batch_deadline_s=0)
    fake.configure(batch_polls_to_complete=2)
    outcomes: list[WorkOutcome] = []
    run_items(executor(config, keys, run), items_for(config, 3, outcomes), outcomes)
    assert outcomes == [] and len(PendingStore(run).load()) == 1  # submitted, still running

    bad_keys = KeyStore() if problem == "no key" else KeyStore.load(write_keys(tmp_path, {"openai": "rejected-sk-abcdef"}))
    if problem == "wrong key":
        original = registries().batch_runners.get("openai")

        def rejecting(model: ModelConfig, credentials: Any) -> Any:
            runner = original(model, credentials)

            async def poll(job_id: str) -> Any:
                from coeval_providers._errors import from_status

                raise from_status("openai", 401, {"error": {"message": "Incorrect API key provided"}})

            runner.poll = poll
            return runner

        monkeypatch.setattr(registries().batch_runners, "get", lambda name: rejecting)
    stranded: list[WorkOutcome] = []
    ex = executor(config, bad_keys, run, submit=False, wait=False)
    run_items(ex, items_for(config, 3, stranded), stranded)
    monkeypatch.undo()
    assert [o for o in stranded if o.status == "failed"] == []
    assert len(PendingStore(run).load()) == 1 and ex.left_pending  # still there to collect

    collected: list[WorkOutcome] = []
    run_items(executor(config, keys, run), items_for(config, 3, collected), collected)
    assert fake.counts["openai.batches.create"] == 1
    assert len(collected) == 3 and all(o.status == "ok" for o in collected)


def test_job_the_provider_no_longer_knows_fails_its_items(fake: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 404 for the job itself: nothing to wait for, so its items fail and `--continue` retries them."""
    config, keys, run = setup("openai", fake, tmp_path, batch_deadline_s=0)
    fake.configure(batch_polls_to_complete=100)
    outcomes: list[WorkOutcome] = []
    run_items(executor(config, keys, run), items_for(config, 2, outcomes), outcomes)
    fake.state.jobs.clear()  # the provider forgot it
    gone: list[WorkOutcome] = []
    run_items(executor(config, keys, run, submit=False, wait=False), items_for(config, 2, gone), gone)
    assert len(gone) == 2 and all(o.status == "failed" for o in gone)
    assert PendingStore(run).load() == []
