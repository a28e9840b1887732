"""Every interface with no ``base_url``: the adapter and its SDK pick the provider's public host
and path themselves, and the call reaches the path the real service serves.

The public host is mapped to the fake without DNS: the HTTP clients the SDKs use (aiohttp for
openai, anthropic and google-genai; urllib3 for boto3) have their outgoing URL rewritten from
the public origin to the fake's, and the original URL is kept for the assertion. The fake's
strict routes then refuse any path the real API does not serve.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import aiohttp
import botocore.httpsession
import pytest
import yarl
from coeval.config.credentials import KeyStore
from coeval.config.model import ModelConfig
from coeval.interfaces.base import GenerateRequest, GenerateResult
from coeval.plugins.manager import registries

from tests.providers.conftest import ALL_INTERFACES, SECRET, provider_setup, write_keys

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

BEDROCK_MODEL = "anthropic.claude-3-haiku-20240307-v1:0"
AZURE_ENDPOINT = "https://coeval-test.openai.azure.com"
#: The URL each interface must reach when nothing overrides its endpoint (each vendor's API
#: reference; Azure's resource host is the user's, its path and api-version are the adapter's).
EXPECTED_URL = {
    "openai": "https://api.openai.com/v1/chat/completions",
    "azure_openai": f"{AZURE_ENDPOINT}/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-10-21",
    "anthropic": "https://api.anthropic.com/v1/messages",
    "gemini": "https://generativelanguage.googleapis.com/v1/models/gemini-2.0-flash:generateContent",
    "vertex": "https://us-central1-aiplatform.googleapis.com/v1beta1/projects/proj/locations/us-central1/"
              "publishers/google/models/gemini-2.0-flash:generateContent",
    "bedrock": f"https://bedrock-runtime.us-east-1.amazonaws.com/model/{BEDROCK_MODEL.replace(':', '%3A')}/converse",
    "mistral": "https://api.mistral.ai/v1/chat/completions",
    "openrouter": "https://openrouter.ai/api/v1/chat/completions",
    "groq": "https://api.groq.com/openai/v1/chat/completions",
    "deepseek": "https://api.deepseek.com/v1/chat/completions",
    "deepinfra": "https://api.deepinfra.com/v1/openai/chat/completions",
    "cerebras": "https://api.cerebras.ai/v1/chat/completions",
    "cohere": "https://api.cohere.ai/compatibility/v1/chat/completions",
    "huggingface_api": "https://router.huggingface.co/v1/chat/completions",
    "ollama": "http://localhost:11434/v1/chat/completions",
    "azure_ai": "https://models.inference.ai.azure.com/chat/completions",
    # vLLM has no public host: its conventional local address, given through VLLM_BASE_URL.
    "vllm": "http://localhost:8000/v1/chat/completions",
}
#: Environment variables that would move an SDK or adapter off its default host.
_ENDPOINT_ENV = ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_VERTEX_BASE_URL",
                 "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "OLLAMA_HOST", "OPENAI_API_VERSION",
                 "GOOGLE_GENAI_API_VERSION", "AZURE_OPENAI_ENDPOINT")


class PublicHosts:
    """Sends requests for the public origins in ``EXPECTED_URL`` to the fake; remembers them."""

    def __init__(self, fake_url: str) -> None:
        self.fake = yarl.URL(fake_url)
        self.origins = {str(yarl.URL(u).origin()) for u in EXPECTED_URL.values()}
        self.seen: list[str] = []

    def rewrite(self, url: str) -> str:
        parsed = yarl.URL(url, encoded=True)
        if str(parsed.origin()) not in self.origins:
            return url
        self.seen.append(url)
        return str(parsed.with_scheme(self.fake.scheme).with_host(self.fake.host or "").with_port(self.fake.port))


@pytest.fixture
def public_hosts(fake: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[PublicHosts]:
    hosts = PublicHosts(fake.url)
    original_request = aiohttp.ClientSession._request
    original_send = botocore.httpsession.URLLib3Session.send

    async def request(self: aiohttp.ClientSession, method: str, str_or_url: Any, *args: Any, **kwargs: Any) -> Any:
        url = yarl.URL(str(str_or_url), encoded=True)
        if kwargs.get("params"):
            url = url.update_query(kwargs.pop("params"))
        return await original_request(self, method, hosts.rewrite(str(url)), *args, **kwargs)

    def send(self: Any, request: Any) -> Any:
        request.url = hosts.rewrite(request.url)
        return original_send(self, request)

    monkeypatch.setattr(aiohttp.ClientSession, "_request", request)
    monkeypatch.setattr(botocore.httpsession.URLLib3Session, "send", send)
    for var in _ENDPOINT_ENV:
        monkeypatch.delenv(var, raising=False)
    yield hosts


def _model_without_base_url(name: str, fake_url: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[ModelConfig, Any]:
    params, entry, _ = provider_setup(name, fake_url)
    params = {k: v for k, v in params.items() if k not in ("base_url", "storage_base_url")}
    if name == "azure_openai":
        entry = {"api_key": f"key-{SECRET}", "endpoint": AZURE_ENDPOINT}  # no api_version: the default
    if name == "vllm":
        monkeypatch.setenv("VLLM_BASE_URL", "http://localhost:8000/v1")
    keys = KeyStore.load(write_keys(tmp_path, {name: entry}))
    model = ModelConfig(name=f"{name}-model", interface=name, roles=("student",), parameters={**params, "max_tokens": 64})
    return model, keys.for_provider(name)


@pytest.mark.parametrize("name", ALL_INTERFACES)
def test_default_base_url_reaches_the_real_path(name: str, fake: Any, public_hosts: PublicHosts, tmp_path: Any,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    model, creds = _model_without_base_url(name, fake.url, tmp_path, monkeypatch)
    iface = registries().interfaces.get(name)(model, creds)

    async def go() -> GenerateResult:
        try:
            return await iface.generate(GenerateRequest(prompt="Say hello.", params=model.parameters))
        finally:
            await iface.aclose()

    result = asyncio.run(go())
    assert public_hosts.seen == [EXPECTED_URL[name]]
    route = provider_setup(name, fake.url)[2]
    (sent,) = fake.requests(route)
    assert (result.usage.input_tokens, result.usage.output_tokens) == (2, sent["output_tokens"])
    assert result.text.startswith("Reply ")
