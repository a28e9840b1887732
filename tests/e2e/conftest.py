"""The fake provider server for end-to-end batch runs: one per module, reset around each
test, with batch jobs polled every 20 ms (files that need another server define their own
``fake``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from coeval_testing.fake_server import FakeServer


@pytest.fixture(scope="module")
def fake_server() -> Iterator[FakeServer]:
    with FakeServer() as server:
        yield server


@pytest.fixture
def fake(fake_server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    fake_server.reset()
    monkeypatch.setenv("COEVAL_BATCH_POLL_INTERVAL", "0.02")
    yield fake_server
    fake_server.reset()
