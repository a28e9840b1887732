"""Replica routing rules: least outstanding, ejection, probing with backoff, re-admission."""

from __future__ import annotations

import asyncio

import pytest
from coeval_providers.interfaces._replicas import ReplicaSet, ReplicasUnavailableError


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_a_refusing_replica_is_ejected_probed_with_backoff_and_readmitted() -> None:
    clock = Clock()
    replicas = ReplicaSet.of(["http://a", "http://b"])
    replicas.clock = clock
    down = {"http://a"}
    sent: list[str] = []

    async def send(url: str) -> str:
        sent.append(url)
        if url in down:
            raise ConnectionRefusedError(url)
        return url

    async def calls(n: int) -> list[str]:
        return [await replicas.call(send) for _ in range(n)]

    assert asyncio.run(calls(3)) == ["http://b"] * 3  # a refused once, then left alone
    assert sent == ["http://a", "http://b", "http://b", "http://b"]
    a = replicas.replicas[0]
    assert a.ejected_until == pytest.approx(101.0)  # first ejection: 1 s
    clock.t = 101.5  # due for a probe; still down: ejected for 2 s
    asyncio.run(calls(1))
    assert a.ejected_until == pytest.approx(103.5)
    down.clear()
    clock.t = 104.0  # the probe answers: re-admitted
    assert asyncio.run(calls(1)) == ["http://a"]
    assert a.ejected_until == 0.0 and a.ejections == 0


def test_every_replica_down_raises_a_connection_error_naming_them() -> None:
    replicas = ReplicaSet.of(["http://a", "http://b"])

    async def send(url: str) -> str:
        raise ConnectionRefusedError(url)

    with pytest.raises(ReplicasUnavailableError, match="http://a, http://b"):
        asyncio.run(replicas.call(send))


def test_calls_go_to_the_replica_with_fewest_outstanding() -> None:
    replicas = ReplicaSet.of(["http://a", "http://b"])
    replicas.replicas[0].outstanding = 3
    assert replicas.pick() is replicas.replicas[1]
