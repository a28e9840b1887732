"""Every batch runner through its real SDK against the fake's batch life cycle: submit, in
progress, completed with one failed line, expired, failed; one model per job."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from coeval.interfaces.base import GenerateRequest, GenerateResult, ModelError
from coeval.plugins.manager import registries
from coeval.scheduler.batching import BatchRunner

from tests.providers.conftest import BATCH_INTERFACES, SECRET, model_and_credentials

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SCHEMA = {"type": "object", "properties": {"score": {"enum": ["High", "Medium", "Low"]}}, "required": ["score"]}
CREATE_ROUTE = {
    "openai": "openai.batches.create", "azure_openai": "openai.batches.create", "anthropic": "anthropic.batches.create",
    "gemini": "gemini.batches.create", "vertex": "vertex.batches.create", "bedrock": "bedrock.jobs.create",
    "mistral": "mistral.batch.create",
}

#: How each API reports a job that ran out of time: Anthropic ends the batch and marks the
#: unfinished lines expired; the others report the job itself expired.
EXPIRED_STATE = {name: "completed" if name == "anthropic" else "expired" for name in BATCH_INTERFACES}
#: Which of the three unfinished lines come back as errors: OpenAI-style error files and Anthropic
#: results name them; Gemini, Vertex and Bedrock outputs hold only finished lines, and the
#: executor reports the absent ones as failed.
EXPIRED_LINES_REPORTED: dict[str, list[str]] = {
    name: [] if name in ("gemini", "vertex", "bedrock") else ["r1", "r2", "r3"] for name in BATCH_INTERFACES
}
#: Anthropic has no failed job state: a batch that fails ends with every line errored.
FAILED_STATE = {name: "completed" if name == "anthropic" else "failed" for name in BATCH_INTERFACES}


def make_runner(name: str, fake: Any, tmp_path: Any) -> BatchRunner:
    model, creds = model_and_credentials(name, fake.url, tmp_path)
    return registries().batch_runners.get(name)(model, creds)


def requests(runner: BatchRunner, n: int = 4) -> list[tuple[str, GenerateRequest]]:
    params = runner.model.params_for("judge")
    return [(f"r{i}", GenerateRequest(prompt=f"Question number {i}?", params=params,
                                      json_schema=SCHEMA if i == 0 else None)) for i in range(n)]


async def drive(runner: BatchRunner, reqs: list[tuple[str, GenerateRequest]]) -> tuple[list[str], dict[str, Any]]:
    """Submit, poll until the job ends (recording each state), collect."""
    try:
        job = await runner.submit(reqs)
        states = []
        for _ in range(10):
            status = await runner.poll(job)
            states.append(status.state)
            if status.terminal:
                break
        return states, dict(await runner.collect(job))
    finally:
        await runner.aclose()


@pytest.mark.parametrize("name", BATCH_INTERFACES)
def test_completed_job_with_one_failed_line(name: str, fake: Any, tmp_path: Any) -> None:
    fake.configure(batch_polls_to_complete=3, batch_failed_lines=1)
    runner = make_runner(name, fake, tmp_path)
    states, results = asyncio.run(drive(runner, requests(runner)))
    assert states == ["running", "running", "completed"]  # in progress twice, then done
    assert fake.counts[CREATE_ROUTE[name]] == 1
    assert set(results) == {"r0", "r1", "r2", "r3"}
    ok = {k: v for k, v in results.items() if isinstance(v, GenerateResult)}
    assert set(ok) == {"r0", "r1", "r2"}
    assert json.loads(ok["r0"].text)["score"] in ("High", "Medium", "Low")  # structured output survives batch
    price = runner.iface.price  # type: ignore[attr-defined]
    for cid in ("r1", "r2"):  # "Question number N?" is 3 tokens; the reply's words are its output
        assert (ok[cid].usage.input_tokens, ok[cid].usage.output_tokens) == (3, len(ok[cid].text.split()))
        expected = (3 * price.input + ok[cid].usage.output_tokens * price.output) / 1_000_000 * 0.5
        assert ok[cid].cost_usd == pytest.approx(expected, rel=1e-12, abs=0)
    failed = results["r3"]
    assert isinstance(failed, ModelError) and failed.retryable
    assert SECRET not in str(failed)


@pytest.mark.parametrize("name", BATCH_INTERFACES)
def test_batch_price_is_discounted(name: str, fake: Any, tmp_path: Any) -> None:
    runner = make_runner(name, fake, tmp_path)
    _, results = asyncio.run(drive(runner, requests(runner, 2)))
    result = results["r1"]
    assert isinstance(result, GenerateResult)
    price = runner.iface.price  # type: ignore[attr-defined]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (3, len(result.text.split()))
    full = (3 * price.input + result.usage.output_tokens * price.output) / 1_000_000
    assert price.batch_discount == 0.5
    assert result.cost_usd == pytest.approx(full * 0.5, rel=1e-12, abs=0)


@pytest.mark.parametrize("name", BATCH_INTERFACES)
def test_expired_job_returns_finished_lines_and_fails_the_rest(name: str, fake: Any, tmp_path: Any) -> None:
    fake.configure(batch_outcome="expired", batch_done_before_expiry=1)
    runner = make_runner(name, fake, tmp_path)
    states, results = asyncio.run(drive(runner, requests(runner)))
    assert states[-1] == EXPIRED_STATE[name]
    assert isinstance(results.get("r0"), GenerateResult)
    assert sorted(cid for cid in ("r1", "r2", "r3") if cid in results) == EXPIRED_LINES_REPORTED[name]
    assert all(isinstance(results[cid], ModelError) for cid in EXPIRED_LINES_REPORTED[name])


@pytest.mark.parametrize("name", BATCH_INTERFACES)
def test_failed_job_has_no_results(name: str, fake: Any, tmp_path: Any) -> None:
    fake.configure(batch_outcome="failed")
    runner = make_runner(name, fake, tmp_path)
    states, results = asyncio.run(drive(runner, requests(runner)))
    assert states[-1] == FAILED_STATE[name]
    assert not any(isinstance(v, GenerateResult) for v in results.values())


@pytest.mark.parametrize("name", ["openai", "anthropic", "gemini", "bedrock"])
def test_job_holds_only_its_model(name: str, fake: Any, tmp_path: Any) -> None:
    runner = make_runner(name, fake, tmp_path)
    asyncio.run(drive(runner, requests(runner)))
    (job,) = fake.state.jobs.values()
    assert job.model == runner.iface.model_id  # type: ignore[attr-defined]
    assert len(job.requests) == 4


def test_openai_runner_chunks_by_bytes(fake: Any, tmp_path: Any) -> None:
    runner = make_runner("openai", fake, tmp_path)
    runner.max_bytes_per_job = 2000  # type: ignore[attr-defined]
    reqs = requests(runner, 12)
    chunks = runner.chunk_requests(reqs)  # type: ignore[attr-defined]
    assert len(chunks) > 1 and sum(len(c) for c in chunks) == 12
    assert [cid for c in chunks for cid, _ in c] == [cid for cid, _ in reqs]


def test_bedrock_runner_needs_a_bucket_and_role(fake: Any, tmp_path: Any) -> None:
    model, creds = model_and_credentials("bedrock", fake.url, tmp_path, batch_s3_uri=None, batch_role_arn=None)
    runner = registries().batch_runners.get("bedrock")(model, creds)
    reqs = [("r0", GenerateRequest(prompt="x", params=model.parameters))]
    with pytest.raises(ModelError, match="batch_s3_uri"):
        asyncio.run(runner.submit(reqs))
