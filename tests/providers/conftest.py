"""Shared fixtures: one fake provider server per test session, reset before each test, and
the settings that point each real SDK at it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from coeval.config.credentials import Credentials, KeyStore
from coeval.config.model import ModelConfig
from coeval_testing.fake_server import FakeServer

#: The secret every test key embeds; it must never show up in an error or a record.
SECRET = "s3cr3t-0123456789abcdef"


@pytest.fixture(scope="session")
def fake_server() -> Iterator[FakeServer]:
    with FakeServer() as server:
        yield server


@pytest.fixture
def fake(fake_server: FakeServer) -> Iterator[FakeServer]:
    fake_server.reset()
    yield fake_server
    fake_server.reset()


def provider_setup(name: str, url: str, key: str = f"key-{SECRET}") -> tuple[dict[str, Any], dict[str, Any] | str, str]:
    """(model parameters, key-file entry, fake route) that point interface ``name`` at the fake."""
    openai_like = {
        "openai": ("gpt-4o-mini", "/v1"),
        "vllm": ("my-local-model", "/v1"),
        "openrouter": ("meta-llama/llama-3.1-8b-instruct", "/api/v1"),
        "groq": ("llama-3.1-8b-instant", "/openai/v1"),
        "deepseek": ("deepseek-chat", "/v1"),
        "deepinfra": ("meta-llama/Meta-Llama-3.1-8B-Instruct", "/v1/openai"),
        "cerebras": ("llama3.1-8b", "/v1"),
        "cohere": ("command-r-08-2024", "/compatibility/v1"),
        "huggingface_api": ("meta-llama/Llama-3.1-8B-Instruct", "/v1"),
        "mistral": ("mistral-small-latest", "/v1"),
        "azure_ai": ("gpt-4o-mini", "/models"),
    }
    if name in openai_like:
        model, path = openai_like[name]
        return {"model": model, "base_url": url + path}, key, "openai.chat"
    if name == "ollama":
        return {"model": "llama3.2", "base_url": url}, key, "openai.chat"
    if name == "azure_openai":
        return {"model": "gpt-4o-mini"}, {"api_key": key, "endpoint": url, "api_version": "2024-10-21"}, "openai.chat"
    if name == "anthropic":
        return {"model": "claude-haiku-4-5", "base_url": url}, key, "anthropic.messages"
    if name == "gemini":
        return {"model": "gemini-2.0-flash", "base_url": url}, key, "gemini.generate"
    if name == "vertex":
        return ({"model": "gemini-2.0-flash", "base_url": url, "storage_base_url": url, "batch_gcs_uri": "gs://coeval-test/runs"},
                {"project": "proj", "location": "us-central1", "access_token": key}, "vertex.generate")
    if name == "bedrock":
        return ({"model": "anthropic.claude-3-haiku-20240307-v1:0", "base_url": url, "batch_s3_uri": "s3://coeval-test/runs",
                 "batch_role_arn": "arn:aws:iam::123456789012:role/bedrock-batch"},
                {"access_key_id": key, "secret_access_key": f"secret-{SECRET}", "region": "us-east-1"}, "bedrock.converse")
    raise KeyError(name)


ALL_INTERFACES = ("openai", "anthropic", "gemini", "azure_openai", "bedrock", "vertex", "mistral", "openrouter", "groq",
                  "deepseek", "deepinfra", "cerebras", "cohere", "huggingface_api", "ollama", "azure_ai", "vllm")
BATCH_INTERFACES = ("openai", "azure_openai", "anthropic", "gemini", "vertex", "bedrock", "mistral")


def write_keys(tmp_path: Path, entries: dict[str, Any]) -> Path:
    path = tmp_path / "keys.yaml"
    path.write_text(yaml.safe_dump({"providers": entries}), encoding="utf-8")
    return path


def model_and_credentials(name: str, url: str, tmp_path: Path, *, key: str = f"key-{SECRET}", **params: Any) -> tuple[ModelConfig, Credentials]:
    """A model config for ``name`` and its credentials, read through a real key file so that
    secrets are registered for redaction exactly as in a run."""
    base, entry, _ = provider_setup(name, url, key)
    keys = KeyStore.load(write_keys(tmp_path, {name: entry}))
    model = ModelConfig(name=f"{name}-model", interface=name, roles=("student",), parameters={**base, "max_tokens": 64, **params})
    return model, keys.for_provider(name)
