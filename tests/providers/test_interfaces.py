"""Every provider interface, through its real SDK, against the fake server over HTTP, driven by
the real scheduler: usage recorded, Retry-After waited out, 5xx retried, auth failures not
retried and reported without the key, malformed 200s detected and retried."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from coeval.interfaces.base import GenerateRequest
from coeval.plugins import registries
from coeval.scheduler import RetryPolicy, Scheduler, SchedulerLimits, WorkItem, WorkOutcome

from tests.providers.conftest import ALL_INTERFACES, SECRET, model_and_credentials, provider_setup

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

FAST_RETRY = SchedulerLimits(retry=RetryPolicy(base_delay_s=0.02, max_delay_s=0.1))
JUDGE_SCHEMA = {
    "type": "object",
    "properties": {"accuracy": {"enum": ["High", "Medium", "Low"]}, "reason": {"type": "string"}},
    "required": ["accuracy", "reason"],
}


def run_one(name: str, fake: Any, tmp_path: Any, *, key: str | None = None, schema: Any = None,
            limits: SchedulerLimits = FAST_RETRY) -> tuple[WorkOutcome, float]:
    """One item through the scheduler with the registered interface ``name``."""
    kwargs = {"key": key} if key else {}
    model, creds = model_and_credentials(name, fake.url, tmp_path, **kwargs)
    iface = registries().interfaces.get(name)(model, creds)
    outcomes: list[WorkOutcome] = []
    item = WorkItem(key="item-1", phase="response_collection", model=model,
                    request=GenerateRequest(prompt="What is the capital of France?", params=model.params_for("student"),
                                            system="Answer briefly.", json_schema=schema),
                    on_done=outcomes.append)

    async def go() -> float:
        start = time.perf_counter()
        try:
            await Scheduler({model.name: iface}, limits).run("response_collection", [item])
        finally:
            await iface.aclose()
        return time.perf_counter() - start

    elapsed = asyncio.run(go())
    assert len(outcomes) == 1
    return outcomes[0], elapsed


def route(name: str, fake: Any) -> str:
    return provider_setup(name, fake.url)[2]


@pytest.mark.parametrize("name", ALL_INTERFACES)
def test_call_records_usage_and_cost(name: str, fake: Any, tmp_path: Any) -> None:
    outcome, _ = run_one(name, fake, tmp_path)
    assert outcome.status == "ok", outcome.error
    assert outcome.attempts == 1
    assert outcome.usage.input_tokens > 0 and outcome.usage.output_tokens > 0
    assert outcome.value and outcome.value.startswith("Reply ")
    if name in ("ollama", "vllm"):  # local servers: free
        assert not outcome.cost_usd
    else:
        assert outcome.cost_usd is not None and outcome.cost_usd > 0
    assert fake.counts[route(name, fake)] == 1
    sent = fake.requests(route(name, fake))[0]
    assert "capital of France" in sent["prompt"] and "Answer briefly." in sent["prompt"]
    assert sent["max_tokens"] == 64


@pytest.mark.parametrize("name", ALL_INTERFACES)
def test_structured_output_returns_schema_instance(name: str, fake: Any, tmp_path: Any) -> None:
    outcome, _ = run_one(name, fake, tmp_path, schema=JUDGE_SCHEMA)
    assert outcome.status == "ok", outcome.error
    reply = json.loads(outcome.value)
    assert reply["accuracy"] in ("High", "Medium", "Low") and isinstance(reply["reason"], str)
    assert fake.requests(route(name, fake))[0]["schema"] is True  # the schema reached the provider


@pytest.mark.parametrize("name", ALL_INTERFACES)
def test_rate_limit_retry_after_is_waited_out(name: str, fake: Any, tmp_path: Any) -> None:
    fake.push_faults(route(name, fake), [{"kind": "429", "retry_after": "0.6"}])
    outcome, elapsed = run_one(name, fake, tmp_path)
    assert outcome.status == "ok", outcome.error
    assert outcome.attempts == 2
    assert fake.counts[route(name, fake)] == 2  # no hidden SDK retries
    assert elapsed >= 0.55, f"the scheduler did not wait for Retry-After ({elapsed:.2f} s)"


@pytest.mark.parametrize("name", ALL_INTERFACES)
def test_server_error_is_retried(name: str, fake: Any, tmp_path: Any) -> None:
    fake.push_faults(route(name, fake), [{"kind": "500"}])
    outcome, _ = run_one(name, fake, tmp_path)
    assert outcome.status == "ok", outcome.error
    assert outcome.attempts == 2
    assert fake.counts[route(name, fake)] == 2


@pytest.mark.parametrize("name", ALL_INTERFACES)
def test_auth_error_is_fatal_and_hides_the_key(name: str, fake: Any, tmp_path: Any) -> None:
    outcome, _ = run_one(name, fake, tmp_path, key=f"rejected-{SECRET}")
    assert outcome.status == "failed"
    assert outcome.error_kind == "fatal"
    assert outcome.attempts == 1
    assert fake.counts[route(name, fake)] == 1
    assert "authentication failed" in outcome.error
    assert SECRET not in outcome.error


@pytest.mark.parametrize("fault", ["malformed", "shape", "empty"])
@pytest.mark.parametrize("name", ALL_INTERFACES)
def test_malformed_200_is_detected_and_retried(name: str, fault: str, fake: Any, tmp_path: Any) -> None:
    fake.push_faults(route(name, fake), [{"kind": fault}])
    outcome, _ = run_one(name, fake, tmp_path)
    assert outcome.status == "ok", outcome.error
    assert outcome.attempts == 2
    assert outcome.value.startswith("Reply ")  # the retry's answer, never an empty one


@pytest.mark.parametrize("name", ["openai", "anthropic", "gemini", "bedrock"])
def test_malformed_every_time_fails_as_malformed(name: str, fake: Any, tmp_path: Any) -> None:
    fake.push_faults(route(name, fake), [{"kind": "shape"}] * 10)
    limits = SchedulerLimits(max_attempts=3, retry=RetryPolicy(base_delay_s=0.01, max_delay_s=0.02))
    outcome, _ = run_one(name, fake, tmp_path, limits=limits)
    assert outcome.status == "failed"
    assert outcome.error_kind == "malformed"
    assert outcome.attempts == 3
