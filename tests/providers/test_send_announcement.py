"""Interfaces whose HTTP client says when a request leaves: the call ledger's start line is
written at that moment, once per call, before the server sees the request, so a kill cannot
count a call the SDK was still building."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from coeval.interfaces.base import GenerateRequest
from coeval.interfaces.sending import on_send
from coeval.plugins.manager import registries

from tests.providers.conftest import ALL_INTERFACES, model_and_credentials
from tests.providers.test_interfaces import route

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ANNOUNCING = tuple(n for n in ALL_INTERFACES if n not in ("gemini", "vertex", "bedrock"))


@pytest.mark.parametrize("name", ANNOUNCING)
def test_the_send_is_announced_once_before_the_server_sees_the_request(name: str, fake: Any, tmp_path: Any) -> None:
    model, creds = model_and_credentials(name, fake.url, tmp_path)
    iface = registries().interfaces.get(name)(model, creds)
    assert iface.announces_send
    seen_at_announcement: list[int] = []

    def hook() -> None:
        seen_at_announcement.append(fake.counts.get(route(name, fake), 0))

    async def go() -> None:
        try:
            with on_send(hook):
                await iface.generate(GenerateRequest(prompt="What is 2+2?", params=model.params_for("student")))
            await iface.generate(GenerateRequest(prompt="And 3+3?", params=model.params_for("student")))
        finally:
            await iface.aclose()

    asyncio.run(go())
    assert seen_at_announcement == [0]  # once, before the request arrived; the call outside the block: nobody
    assert fake.counts[route(name, fake)] == 2


@pytest.mark.parametrize("name", ANNOUNCING)
def test_a_start_line_that_cannot_be_written_keeps_the_request_home(name: str, fake: Any, tmp_path: Any) -> None:
    model, creds = model_and_credentials(name, fake.url, tmp_path)
    iface = registries().interfaces.get(name)(model, creds)

    def full_disk() -> None:
        raise OSError(28, "No space left on device", "calls.jsonl")

    async def go() -> None:
        try:
            with on_send(full_disk):
                await iface.generate(GenerateRequest(prompt="What is 2+2?", params=model.params_for("student")))
        finally:
            await iface.aclose()

    with pytest.raises(Exception):  # noqa: B017 - each SDK wraps it in its own connection error
        asyncio.run(go())
    assert fake.counts.get(route(name, fake), 0) == 0


@pytest.mark.parametrize("name", ["openai", "anthropic"])
def test_behind_an_environment_proxy_setting_the_send_is_still_announced(name: str, fake: Any, tmp_path: Any,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # a proxy's transport is not the traced one: httpx's request hook announces instead
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    model, creds = model_and_credentials(name, fake.url, tmp_path)
    iface = registries().interfaces.get(name)(model, creds)
    seen: list[int] = []

    async def go() -> None:
        try:
            with on_send(lambda: seen.append(fake.counts.get(route(name, fake), 0))):
                await iface.generate(GenerateRequest(prompt="What is 2+2?", params=model.params_for("student")))
        finally:
            await iface.aclose()

    asyncio.run(go())
    assert seen == [0]
    assert fake.counts[route(name, fake)] == 1
