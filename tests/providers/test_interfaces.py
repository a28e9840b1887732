"""Every provider interface, through its real SDK, against the fake server over HTTP, driven by
the real scheduler: usage recorded, Retry-After waited out, 5xx retried, auth failures not
retried and reported without the key, malformed 200s detected and retried."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from coeval.interfaces.base import GenerateRequest, GenerateResult, MalformedResponseError
from coeval.plugins.manager import registries
from coeval.scheduler import ManualClock, RetryPolicy, Scheduler, SchedulerLimits, WorkItem, WorkOutcome

from tests.providers.conftest import ALL_INTERFACES, SECRET, model_and_credentials, provider_setup

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

FAST_RETRY = SchedulerLimits(retry=RetryPolicy(base_delay_s=0.02, max_delay_s=0.1))
JUDGE_SCHEMA = {
    "type": "object",
    "properties": {"accuracy": {"enum": ["High", "Medium", "Low"]}, "reason": {"type": "string"}},
    "required": ["accuracy", "reason"],
}


def schedule_one(model: Any, iface: Any, request: GenerateRequest, *, phase: str = "response_collection",
                 limits: SchedulerLimits = FAST_RETRY, clock: Any = None) -> tuple[WorkOutcome, float]:
    """One request through the real scheduler, then the interface closed: its outcome and the
    seconds it took (on ``clock`` when given: virtual time)."""
    outcomes: list[WorkOutcome] = []
    item = WorkItem(key="item-1", phase=phase, model=model, request=request, on_done=outcomes.append)

    async def go() -> float:
        now = clock.now if clock is not None else time.perf_counter
        start = now()
        try:
            await Scheduler({model.name: iface}, limits, clock=clock).run(phase, [item])
        finally:
            await iface.aclose()
        return now() - start

    elapsed = asyncio.run(go())
    assert len(outcomes) == 1
    return outcomes[0], elapsed


def generate_once(iface: Any, request: GenerateRequest) -> GenerateResult:
    """One direct ``generate`` call, then the interface closed."""

    async def go() -> GenerateResult:
        try:
            return await iface.generate(request)
        finally:
            await iface.aclose()

    return asyncio.run(go())


def run_one(name: str, fake: Any, tmp_path: Any, *, key: str | None = None, schema: Any = None,
            limits: SchedulerLimits = FAST_RETRY, clock: Any = None) -> tuple[WorkOutcome, float]:
    """One item through the scheduler with the registered interface ``name``."""
    kwargs = {"key": key} if key else {}
    model, creds = model_and_credentials(name, fake.url, tmp_path, **kwargs)
    iface = registries().interfaces.get(name)(model, creds)
    request = GenerateRequest(prompt="What is the capital of France?", params=model.params_for("student"),
                              system="Answer briefly.", json_schema=schema)
    return schedule_one(model, iface, request, limits=limits, clock=clock)


def route(name: str, fake: Any) -> str:
    return provider_setup(name, fake.url)[2]


#: "Answer briefly." + "What is the capital of France?": the fake counts one token per word.
PROMPT_TOKENS = 8


@pytest.mark.parametrize("name", ALL_INTERFACES)
def test_call_records_exact_usage_and_cost(name: str, fake: Any, tmp_path: Any) -> None:
    """The record's tokens are the server's, input and output not swapped, and the cost is
    exactly price x tokens."""
    model, creds = model_and_credentials(name, fake.url, tmp_path)
    iface = registries().interfaces.get(name)(model, creds)
    price = iface.price
    request = GenerateRequest(prompt="What is the capital of France?", params=model.params_for("student"),
                              system="Answer briefly.")
    outcome, _ = schedule_one(model, iface, request)
    assert outcome.status == "ok", outcome.error
    assert outcome.attempts == 1
    assert outcome.value and outcome.value.startswith("Reply ")
    assert fake.counts[route(name, fake)] == 1
    sent = fake.requests(route(name, fake))[0]
    assert "capital of France" in sent["prompt"] and "Answer briefly." in sent["prompt"]
    assert sent["max_tokens"] == 64
    assert sent["input_tokens"] == PROMPT_TOKENS
    assert sent["output_tokens"] == len(outcome.value.split()) != PROMPT_TOKENS  # a swap cannot go unseen
    assert (outcome.usage.input_tokens, outcome.usage.output_tokens) == (sent["input_tokens"], sent["output_tokens"])
    if name in ("ollama", "vllm"):  # local servers: free
        assert not outcome.cost_usd
    else:
        assert price is not None
        expected = (PROMPT_TOKENS * price.input + sent["output_tokens"] * price.output) / 1_000_000
        assert outcome.cost_usd == pytest.approx(expected, rel=1e-12, abs=0)


@pytest.mark.parametrize("name", ALL_INTERFACES)
def test_structured_output_returns_schema_instance(name: str, fake: Any, tmp_path: Any) -> None:
    outcome, _ = run_one(name, fake, tmp_path, schema=JUDGE_SCHEMA)
    assert outcome.status == "ok", outcome.error
    reply = json.loads(outcome.value)
    assert reply["accuracy"] in ("High", "Medium", "Low") and isinstance(reply["reason"], str)
    assert fake.requests(route(name, fake))[0]["schema"] is True  # the schema reached the provider


@pytest.mark.parametrize("name", ALL_INTERFACES)
def test_rate_limit_retry_after_is_waited_out(name: str, fake: Any, tmp_path: Any) -> None:
    """The provider's Retry-After reaches the scheduler, which waits it out (on a virtual clock:
    the wait is asserted, not slept)."""
    clock = ManualClock()
    fake.push_faults(route(name, fake), [{"kind": "429", "retry_after": "7"}])
    outcome, elapsed = run_one(name, fake, tmp_path, clock=clock)
    assert outcome.status == "ok", outcome.error
    assert outcome.attempts == 2
    assert fake.counts[route(name, fake)] == 2  # no hidden SDK retries
    assert elapsed >= 7.0, f"the scheduler did not wait for Retry-After ({elapsed:.2f} virtual s, sleeps {clock.sleeps})"


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


@pytest.mark.parametrize("name", ALL_INTERFACES)
def test_empty_reply_cut_by_the_token_limit_says_so_in_a_typed_field(name: str, fake: Any, tmp_path: Any) -> None:
    fake.push_faults(route(name, fake), [{"kind": "length_empty"}])
    model, creds = model_and_credentials(name, fake.url, tmp_path)
    iface = registries().interfaces.get(name)(model, creds)
    with pytest.raises(MalformedResponseError) as err:
        generate_once(iface, GenerateRequest(prompt="hello", params=model.parameters))
    assert err.value.finish_reason == "length"


@pytest.mark.parametrize("name", ["openai", "anthropic", "gemini", "bedrock", "groq"])
def test_probe_accepts_a_real_empty_reply_cut_by_the_token_limit(name: str, fake: Any, tmp_path: Any) -> None:
    """A reasoning model given a tiny budget answers with nothing but "stopped at the limit": it
    is alive. The fake sends that reply over HTTP; the probe reads the error's finish_reason."""
    fake.push_faults(route(name, fake), [{"kind": "length_empty"}])
    model, creds = model_and_credentials(name, fake.url, tmp_path)
    iface = registries().interfaces.get(name)(model, creds)

    async def go() -> None:
        try:
            await iface.probe()
        finally:
            await iface.aclose()

    asyncio.run(go())
    (sent,) = fake.requests(route(name, fake))
    assert sent["max_tokens"] == 16 and sent["finish"] == "length" and sent["fault"] == "length_empty"


@pytest.mark.parametrize("name", ["openai", "anthropic", "gemini", "bedrock"])
def test_probe_still_fails_on_an_empty_reply_that_was_not_cut(name: str, fake: Any, tmp_path: Any) -> None:
    fake.push_faults(route(name, fake), [{"kind": "shape"}])
    model, creds = model_and_credentials(name, fake.url, tmp_path)
    iface = registries().interfaces.get(name)(model, creds)

    async def go() -> None:
        try:
            await iface.probe()
        finally:
            await iface.aclose()

    with pytest.raises(MalformedResponseError) as err:
        asyncio.run(go())
    assert err.value.finish_reason is None


def test_reasoning_models_get_max_completion_tokens_and_no_temperature(fake: Any, tmp_path: Any) -> None:
    model, creds = model_and_credentials("openai", fake.url, tmp_path, model="o3-mini", temperature=0.2)
    iface = registries().interfaces.get("openai")(model, creds)
    body = iface.build_body(GenerateRequest(prompt="x", params=model.parameters))
    assert body["max_completion_tokens"] == 64 and "max_tokens" not in body and "temperature" not in body
    plain, creds = model_and_credentials("openai", fake.url, tmp_path, temperature=0.2)
    body = registries().interfaces.get("openai")(plain, creds).build_body(GenerateRequest(prompt="x", params=plain.parameters))
    assert body["max_tokens"] == 64 and body["temperature"] == 0.2


def test_anthropic_sampling_parameters_need_the_older_api_version(fake: Any, tmp_path: Any,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger="coeval.providers.anthropic"):
        model, creds = model_and_credentials("anthropic", fake.url, tmp_path, temperature=0.0)
        iface = registries().interfaces.get("anthropic")(model, creds)
    assert "temperature not sent" in caplog.text
    assert "temperature" not in iface.params(GenerateRequest(prompt="x", params=model.parameters))
    legacy, creds = model_and_credentials("anthropic", fake.url, tmp_path, temperature=0.0, anthropic_version="2023-06-01")
    legacy_iface = registries().interfaces.get("anthropic")(legacy, creds)
    outcome, _ = schedule_one(legacy, legacy_iface, GenerateRequest(prompt="judge this", params=legacy.parameters),
                              phase="evaluation")
    assert outcome.status == "ok"
    assert fake.requests("anthropic.messages")[0]["headers"]["anthropic-version"] == "2023-06-01"


def test_bedrock_api_key_is_sent_as_a_bearer_token(fake: Any, tmp_path: Any) -> None:
    from coeval.config.credentials import KeyStore

    from tests.providers.conftest import write_keys

    keys = KeyStore.load(write_keys(tmp_path, {"bedrock": {"api_key": f"BedrockAPIKey-{SECRET}", "region": "us-east-1"}}))
    base, _, _ = provider_setup("bedrock", fake.url)
    from coeval.config.model import ModelConfig

    model = ModelConfig(name="b", interface="bedrock", parameters={**base, "max_tokens": 20})
    iface = registries().interfaces.get("bedrock")(model, keys.for_provider("bedrock"))
    seen: dict[str, str] = {}
    client = iface.boto_client("bedrock-runtime")
    client.meta.events.register("before-send.bedrock-runtime.Converse",
                                lambda request, **_: seen.update(auth=request.headers.get("Authorization", b"")) or None)

    result = generate_once(iface, GenerateRequest(prompt="hi", params=model.parameters))
    assert result.text
    auth = seen["auth"].decode() if isinstance(seen["auth"], bytes) else seen["auth"]
    assert auth == f"Bearer BedrockAPIKey-{SECRET}"  # no SigV4 signature


def test_azure_v1_surface(fake: Any, tmp_path: Any) -> None:
    from coeval.config.credentials import KeyStore

    from tests.providers.conftest import write_keys

    keys = KeyStore.load(write_keys(tmp_path, {"azure_openai": {"api_key": "az-key-123456", "endpoint": fake.url,
                                                                "api_version": "v1"}}))
    from coeval.config.model import ModelConfig

    model = ModelConfig(name="az", interface="azure_openai", parameters={"model": "my-deployment", "max_tokens": 20})
    iface = registries().interfaces.get("azure_openai")(model, keys.for_provider("azure_openai"))

    assert generate_once(iface, GenerateRequest(prompt="hi", params=model.parameters)).text
    sent = fake.requests("openai.chat")[0]
    assert sent["path"] == "/openai/v1/chat/completions" and sent["model"] == "my-deployment"


@pytest.mark.parametrize("fault", ["hang", "truncate", "reset"])
@pytest.mark.parametrize("name", ["openai", "anthropic", "gemini", "bedrock"])
def test_timeouts_and_broken_connections_are_retried(name: str, fault: str, fake: Any, tmp_path: Any) -> None:
    fake.push_faults(route(name, fake), [{"kind": fault, "hang_s": 3}])
    model, creds = model_and_credentials(name, fake.url, tmp_path, timeout=0.5)
    iface = registries().interfaces.get(name)(model, creds)
    outcome, _ = schedule_one(model, iface, GenerateRequest(prompt="hello", params=model.parameters))
    assert outcome.status == "ok", outcome.error
    # a reset connection is a server going away: waited for, not counted as an attempt
    assert outcome.attempts == (1 if fault == "reset" else 2)
    assert fake.counts[route(name, fake)] == 2  # no retry hidden in the SDK or its transport


def _closed_port_url() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("name", ["openai", "anthropic", "gemini", "bedrock", "vertex", "azure_openai"])
def test_wrong_base_url_says_cannot_connect_and_names_the_host(name: str, tmp_path: Any) -> None:
    """A base_url where nothing listens is a transient error that says which host could not be
    reached and what to check, not "request timed out" (which sends users to raise timeouts)."""
    from coeval.interfaces.base import TransientModelError

    url = _closed_port_url()
    model, creds = model_and_credentials(name, url, tmp_path)
    iface = registries().interfaces.get(name)(model, creds)
    with pytest.raises(TransientModelError) as err:
        generate_once(iface, GenerateRequest(prompt="hello", params=model.parameters))
    message = str(err.value)
    assert message.startswith(f"{name}: cannot connect"), message
    assert url.removeprefix("http://") in message and "base_url" in message
    assert "timed out" not in message and SECRET not in message


def test_vertex_without_any_google_credentials_is_fatal_and_says_how_to_fix(tmp_path: Any, monkeypatch: Any) -> None:
    """No token, no service-account file and no Application Default Credentials: every retry
    would fail the same way, so the error is fatal and names the settings to fix."""
    from coeval.config.credentials import Credentials
    from coeval.config.model import ModelConfig
    from coeval.interfaces.base import FatalModelError

    for var in ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no gcloud ADC file
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    monkeypatch.setenv("NO_GCE_CHECK", "True")  # no metadata server either
    model = ModelConfig(name="vx", interface="vertex", roles=("student",),
                        parameters={"model": "gemini-2.0-flash", "base_url": _closed_port_url()})
    iface = registries().interfaces.get("vertex")(model, Credentials("vertex", fields={"project": "p", "location": "us-central1"}))
    with pytest.raises(FatalModelError) as err:
        generate_once(iface, GenerateRequest(prompt="hello", params=model.parameters))
    assert "credentials" in str(err.value) and "service_account_key" in str(err.value)


def test_vllm_without_base_url_names_every_place_to_set_it(monkeypatch: Any) -> None:
    from coeval.config.model import ModelConfig
    from coeval.interfaces.base import FatalModelError

    monkeypatch.delenv("VLLM_BASE_URL", raising=False)
    model = ModelConfig(name="local", interface="vllm", roles=("student",), parameters={"model": "m"})
    iface = registries().interfaces.get("vllm")(model, None)
    with pytest.raises(FatalModelError) as err:
        generate_once(iface, GenerateRequest(prompt="hello", params=model.parameters))
    assert "parameters.base_url" in str(err.value) and "VLLM_BASE_URL" in str(err.value)
