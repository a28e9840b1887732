"""End to end through the OpenAI SDK against the fake server: a judge's batch reply that cannot
be parsed is retried in real time, with the correction turn and a new seed, and its record
counts both calls; ``--continue`` afterwards submits nothing."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml
from coeval.plugins.config_loading import load_config
from coeval.run.options import RunOptions
from coeval.run.runner import run_experiment
from coeval.scheduler.batching import PendingStore
from coeval.scheduler.resample import retry_seed
from coeval.storage.run_folder import RunFolder
from coeval_testing.fake_server import FakeServer

pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning"), pytest.mark.slow]
warnings.filterwarnings("ignore", category=DeprecationWarning)


def write_config(tmp_path: Path, url: str) -> Path:
    (tmp_path / "keys.yaml").write_text(yaml.safe_dump({"providers": {"openai": "sk-e2e-openai-key"}}))
    config: dict[str, Any] = {
        "models": [{"name": "gpt-4o-mini", "interface": "openai", "roles": ["teacher", "student", "judge"],
                    "parameters": {"model": "gpt-4o-mini", "base_url": f"{url}/v1", "max_tokens": 200,
                                   "temperature": 0}}],
        "tasks": [{
            "name": "capitals",
            "description": "Answer a question about the capital city of a country.",
            "output_description": "One sentence naming the capital.",
            "target_attributes": {"continent": ["europe", "asia"]},
            "sampling": {"target": [1, 1], "nuance": [0, 0], "total": 3},
            "rubric": {"correctness": "The capital named is right.", "clarity": "The sentence is clear."},
            "evaluation_mode": "single",
        }],
        "experiment": {"id": "retry", "storage_folder": str(tmp_path / "runs"), "probe_mode": "disable",
                       "item_checks": {"near_duplicate": False},
                       "batch": {"openai": {"evaluation": True}}},
    }
    path = tmp_path / "retry.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def run(config_path: Path, tmp_path: Path, **options: Any) -> Any:
    keys = str(tmp_path / "keys.yaml")
    config = load_config(config_path, keys_file=keys, continue_run=options.get("continue_run", False))
    return run_experiment(config, RunOptions(keys_file=keys, progress=False, **options))


def test_unparseable_judge_batch_reply_is_retried_in_real_time(fake: FakeServer, tmp_path: Path) -> None:
    fake.configure(batch_junk_lines=1)  # the evaluation job's first line comes back as prose
    config_path = write_config(tmp_path, fake.url)
    result = run(config_path, tmp_path)
    assert result.exit_code == 0, result.message
    folder = RunFolder(result.run_folder)
    evaluations = list(folder.iter_records("evaluation"))
    responses = list(folder.iter_records("response_collection"))
    assert len(evaluations) == len(responses) == 3
    assert all(r["status"] == "ok" for r in evaluations)
    assert sorted(r["attempts"] for r in evaluations) == [1, 1, 2]
    assert fake.counts["openai.batches.create"] == 1

    [job] = fake.state.jobs.values()
    first_body = job.requests[0][1]
    first_prompt = " ".join(m["content"] for m in first_body["messages"] if isinstance(m.get("content"), str))
    retries = [e for e in fake.requests("openai.chat") if "was rejected" in e["prompt"]]
    assert len(retries) == 1
    [retried] = [r for r in evaluations if r["attempts"] == 2]
    sent = retries[0]
    assert first_prompt in sent["prompt"]  # the same prompt, with the correction turn after it
    assert f"Your previous reply (item {retried['id']}) was rejected: " in sent["prompt"]
    assert sent["prompt"].endswith("Reply again, fixing this.")
    assert sent["sampling"] == {"temperature": 0.2, "seed": retry_seed(None, retried["id"], 1)}
    assert first_body["temperature"] == 0 and "seed" not in first_body

    # the calls count toward the model's quota: batch calls + the retry
    meta = json.loads((result.run_folder / "meta.json").read_text())
    own_chat = len(fake.requests("openai.chat"))  # phases 1-4 in real time, plus the retry
    assert meta["calls"]["gpt-4o-mini"] == own_chat + len(job.requests)
    events = [json.loads(ln) for ln in (result.run_folder / "run.log").read_text().splitlines() if ln.strip()]
    [told] = [e for e in events if e["event"] == "batch items retried in real time"]
    assert (told["phase"], told["items"], told["ok"], told["failed"]) == ("evaluation", 1, 1, 0)

    before = dict(fake.counts)
    again = run(config_path, tmp_path, continue_run=True)
    assert again.exit_code == 0, again.message
    assert fake.counts.get("openai.batches.create") == before["openai.batches.create"]  # nothing submitted
    assert fake.counts.get("openai.chat") == before["openai.chat"]
    assert PendingStore(folder).load() == []
