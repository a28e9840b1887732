"""End to end through the real provider SDKs against the fake server: a three-model
experiment (openai, anthropic, gemini) run with batch on for response collection and
evaluation gives the same records as a real-time run; a run killed after submitting its batch
jobs is resumed by ``--continue`` and by ``status --fetch-batches`` without a second submission."""

from __future__ import annotations

import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from coeval.config.credentials import KeyStore
from coeval.plugins.config_loading import load_config
from coeval.run.batch_fetch import fetch_pending_batches
from coeval.run.options import RunOptions
from coeval.run.runner import run_experiment
from coeval.scheduler.batching import PendingStore
from coeval.storage.run_folder import RunFolder
from coeval_testing.fake_server import FakeServer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
warnings.filterwarnings("ignore", category=DeprecationWarning)

PHASES = ("data_generation", "response_collection", "evaluation")
BATCH_CREATE = ("openai.batches.create", "anthropic.batches.create", "gemini.batches.create")


def write_config(tmp_path: Path, url: str, *, batch: bool, exp_id: str) -> Path:
    keys = tmp_path / "keys.yaml"
    keys.write_text(yaml.safe_dump({"providers": {"openai": "sk-e2e-openai-key", "anthropic": "sk-ant-e2e-key",
                                                  "gemini": "AIza-e2e-gemini-key"}}))
    models = [
        {"name": "gpt-4o-mini", "interface": "openai", "parameters": {"model": "gpt-4o-mini", "base_url": f"{url}/v1",
                                                                      "max_tokens": 200}},
        {"name": "claude-haiku", "interface": "anthropic", "parameters": {"model": "claude-haiku-4-5", "base_url": url,
                                                                          "max_tokens": 200}},
        {"name": "gemini-flash", "interface": "gemini", "parameters": {"model": "gemini-2.0-flash", "base_url": url,
                                                                      "max_tokens": 200}},
    ]
    for m in models:
        m["roles"] = ["teacher", "student", "judge"]
    config: dict[str, Any] = {
        "models": models,
        "tasks": [{
            "name": "capitals",
            "description": "Answer a question about the capital city of a country.",
            "output_description": "One sentence naming the capital.",
            "target_attributes": {"continent": ["europe", "asia"], "difficulty": ["easy", "hard"]},
            "nuanced_attributes": {"tone": ["plain", "curious"]},
            "sampling": {"target": [1, 1], "nuance": [1, 1], "total": 2},
            "rubric": {"correctness": "The capital named is right.", "clarity": "The sentence is clear."},
            "evaluation_mode": "single",
        }],
        # The fake answers a repeated prompt identically, and two slots with the same attribute
        # draw have the same prompt: keep exactly one call per item here.
        "experiment": {"id": exp_id, "storage_folder": str(tmp_path / "runs"), "probe_mode": "disable",
                       "item_checks": {"near_duplicate": False}},
    }
    if batch:
        config["experiment"]["batch"] = {
            iface: {"response_collection": True, "evaluation": True} for iface in ("openai", "anthropic", "gemini")
        }
    path = tmp_path / f"{exp_id}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def records(run: Path) -> dict[str, dict[str, Any]]:
    """phase -> {record id: status} of every record in the run folder."""
    folder = RunFolder(run)
    return {phase: {r["id"]: r for r in folder.iter_records(phase)} for phase in PHASES}


def run(config_path: Path, tmp_path: Path, **options: Any) -> Any:
    config = load_config(config_path, keys_file=str(tmp_path / "keys.yaml"), continue_run=options.get("continue_run", False))
    return run_experiment(config, RunOptions(keys_file=str(tmp_path / "keys.yaml"), progress=False, **options))


@pytest.mark.slow
def test_batch_run_writes_the_same_records_as_a_real_time_run(fake: FakeServer, tmp_path: Path) -> None:
    realtime = run(write_config(tmp_path, fake.url, batch=False, exp_id="realtime"), tmp_path)
    assert realtime.exit_code == 0, realtime.message
    assert not any(fake.counts.get(r) for r in BATCH_CREATE)
    fake.reset()
    batched = run(write_config(tmp_path, fake.url, batch=True, exp_id="batched"), tmp_path)
    assert batched.exit_code == 0, batched.message
    # one job per model and phase: 3 models x (responses + evaluations)
    assert [fake.counts[r] for r in BATCH_CREATE] == [2, 2, 2]
    a, b = records(realtime.run_folder), records(batched.run_folder)
    assert {p: len(v) for p, v in a.items()} == {"data_generation": 6, "response_collection": 18, "evaluation": 54}
    for phase in PHASES:
        assert set(a[phase]) == set(b[phase]), phase
        assert all(r["status"] == "ok" for r in b[phase].values())
        assert {frozenset(r) for r in a[phase].values()} == {frozenset(r) for r in b[phase].values()}  # same fields
        assert {k: r.get("finish_reason") for k, r in a[phase].items()} == {k: r.get("finish_reason") for k, r in b[phase].items()}
    # phases 4-5 went through batch jobs only: the only real-time calls were phase 3's
    chat_calls = fake.counts.get("openai.chat", 0) + fake.counts.get("anthropic.messages", 0) + fake.counts.get("gemini.generate", 0)
    assert chat_calls == len(b["data_generation"])
    # batch prices: half the real-time price for the same usage
    rt = {k: v for k, v in a["response_collection"].items()}
    for rid, rec in b["response_collection"].items():
        if rec["usage"] == rt[rid]["usage"]:
            assert rec["cost_usd"] == pytest.approx(rt[rid]["cost_usd"] / 2)


def _kill_after_submit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The process 'dies' (KeyboardInterrupt) once all three models' jobs are submitted, before
    any is polled."""
    import asyncio

    from coeval.scheduler.batching.executor import ProviderBatchExecutor

    async def dying(self: Any, job: Any, items: Any, on_outcome: Any, runner: Any = None) -> None:
        while len(PendingStore(self.run_folder).load()) < 3:
            await asyncio.sleep(0.01)
        raise KeyboardInterrupt

    monkeypatch.setattr(ProviderBatchExecutor, "_follow", dying)


@pytest.mark.slow
@pytest.mark.parametrize("resume", ["continue", "fetch-batches"])
def test_killed_run_resumes_without_a_second_submission(resume: str, fake: FakeServer, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    config_path = write_config(tmp_path, fake.url, batch=True, exp_id="killed")
    with monkeypatch.context() as patch:
        _kill_after_submit(patch)
        try:
            killed = run(config_path, tmp_path)
        except KeyboardInterrupt:
            pass
        else:
            assert killed.exit_code == 130
    run_folder = tmp_path / "runs" / "killed"
    pending = PendingStore(RunFolder(run_folder)).load()
    assert len(pending) == 3 and {j.phase for j in pending} == {"response_collection"}
    submitted = [fake.counts[r] for r in BATCH_CREATE]
    assert submitted == [1, 1, 1]
    assert not records(run_folder)["response_collection"]
    if resume == "fetch-batches":
        config = load_config(run_folder / "config.yaml", check_filesystem=False)
        keys = KeyStore.load(tmp_path / "keys.yaml")
        early = fetch_pending_batches(run_folder, config, keys)  # the jobs are still running
        assert early.collected == [] and len(early.still_pending) == 3
        assert not records(run_folder)["response_collection"]
        report = fetch_pending_batches(run_folder, config, keys)  # now they have finished
        assert len(report.collected) == 3 and report.still_pending == []
        assert report.records["ok"] == 18
        assert len(records(run_folder)["response_collection"]) == 18
        assert [fake.counts[r] for r in BATCH_CREATE] == submitted  # collected, not submitted again
    result = run(config_path, tmp_path, continue_run=True)
    assert result.exit_code == 0, result.message
    # phase 4: nothing submitted again; phase 5: one new job per model
    assert [fake.counts[r] for r in BATCH_CREATE] == [2, 2, 2]
    got = records(run_folder)
    assert (len(got["response_collection"]), len(got["evaluation"])) == (18, 54)
    assert PendingStore(RunFolder(run_folder)).load() == []
    ids = Counter(r for r in got["response_collection"])
    assert max(ids.values()) == 1


#: The record field naming the model that made each phase's call.
CALLER_FIELD = {"data_generation": "teacher_model_id", "response_collection": "student_model_id",
                "evaluation": "judge_model_id"}
ROUTE_OF_MODEL = {"gpt-4o-mini": "openai.chat", "claude-haiku": "anthropic.messages", "gemini-flash": "gemini.generate"}


def test_record_tokens_and_cost_equal_what_the_server_counted(fake: FakeServer, tmp_path: Path) -> None:
    """Through the real SDKs, every token the fake answered is in the records, input and output
    apart, and each record's cost is exactly its model's price times its tokens."""
    from coeval_providers.pricing import pricing_table

    result = run(write_config(tmp_path, fake.url, batch=False, exp_id="accounting"), tmp_path)
    assert result.exit_code == 0, result.message
    got = records(result.run_folder)
    prices = {"gpt-4o-mini": pricing_table().price("openai", "gpt-4o-mini"),
              "claude-haiku": pricing_table().price("anthropic", "claude-haiku-4-5"),
              "gemini-flash": pricing_table().price("gemini", "gemini-2.0-flash")}
    for model, route in ROUTE_OF_MODEL.items():
        served = fake.requests(route)
        assert served and all("fault" not in e for e in served)
        mine = [r for phase in PHASES for r in got[phase].values() if r[CALLER_FIELD[phase]] == model]
        assert len(mine) == len(served), model  # one call per record: no retries in this run
        server = (sum(e["input_tokens"] for e in served), sum(e["output_tokens"] for e in served))
        recorded = (sum(r["usage"]["input_tokens"] for r in mine), sum(r["usage"]["output_tokens"] for r in mine))
        assert recorded == server, model
        price = prices[model]
        assert price is not None
        for r in mine:
            expected = (r["usage"]["input_tokens"] * price.input + r["usage"]["output_tokens"] * price.output) / 1e6
            assert r["cost_usd"] == pytest.approx(expected, rel=1e-12, abs=0), (model, r["id"])
