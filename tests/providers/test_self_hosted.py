"""Self-hosted servers at scale: queue-aware concurrency, replicas, waiting for a server, one
lane per endpoint. Real ``openai`` SDK over real HTTP against the local fake server."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

import pytest
from coeval.config.model import ModelConfig
from coeval.interfaces.base import GenerateRequest
from coeval.plugins.manager import registries
from coeval.scheduler import Scheduler, SchedulerLimits, WorkItem, WorkOutcome
from coeval_testing.fake_server import FakeServer
from coeval_testing.fake_server._state import FakeConfig

from tests.providers.conftest import model_and_credentials


def _model(name: str, base_url: Any, **params: Any) -> ModelConfig:
    return ModelConfig(name=name, interface="vllm", roles=("student",),
                       parameters={"model": "local-model", "base_url": base_url, "max_tokens": 16, **params})


def _run(models: list[ModelConfig], per_model: int) -> tuple[list[WorkOutcome], Any, float]:
    """``per_model`` items for each model through one Scheduler; outcomes, stats, wall seconds."""
    ifaces = {m.name: registries().interfaces.get("vllm")(m, None) for m in models}
    outcomes: list[WorkOutcome] = []
    items = [WorkItem(key=f"{m.name}-{i}", phase="response_collection", model=m,
                      request=GenerateRequest(prompt=f"question {i}", params=m.parameters), on_done=outcomes.append)
             for m in models for i in range(per_model)]

    async def go() -> Any:
        try:
            return await Scheduler(ifaces, SchedulerLimits()).run("response_collection", items)
        finally:
            for iface in ifaces.values():
                await iface.aclose()

    start = time.perf_counter()
    stats = asyncio.run(go())
    return outcomes, stats, time.perf_counter() - start


@pytest.mark.slow
def test_a_queueing_server_is_driven_near_capacity_without_timeouts() -> None:
    # 8 slots, 100 ms per call: capacity 80 calls/s; the client's timeout is 1 s
    with FakeServer(FakeConfig(slots=8, latency_ms=100, log_bodies=False)) as fake:
        outcomes, stats, _ = _run([_model("local", fake.url + "/v1", timeout=1)], 160)
        requests = fake.counts["openai.chat"]
    assert [o.status for o in outcomes].count("ok") == 160
    assert requests <= 176  # at most 10% more requests than items
    lane = next(iter(stats.lanes.values()))
    assert lane.peak_in_flight <= 24  # never floods the queue (a rate-limit-only limiter reached 256)
    assert 8 <= lane.limit <= 16  # settled near the server's 8 slots plus a short queue
    assert lane.counters.decreases > 0  # latency, not a 429, shrank it


@pytest.mark.slow
def test_a_loopback_server_that_does_not_queue_is_not_capped(tmp_path: Any) -> None:
    # `openai` on 127.0.0.1 gets the latency-aware limiter; the server answers in 800-880 ms
    # whatever the load, so the limit must keep growing (with a 5% margin it stopped near 20).
    # Long calls keep a busy test machine's own delays small beside the server's latency.
    with FakeServer(FakeConfig(latency_ms=800, jitter_ms=80, log_bodies=False)) as fake:
        model, creds = model_and_credentials("openai", fake.url, tmp_path, max_concurrency=48, max_tokens=16)
        iface = registries().interfaces.get("openai")(model, creds)
        assert iface.queue_aware
        outcomes: list[WorkOutcome] = []
        items = [WorkItem(key=f"i{i}", phase="response_collection", model=model, on_done=outcomes.append,
                          request=GenerateRequest(prompt=f"question {i}", params=model.parameters)) for i in range(600)]

        async def go() -> Any:
            try:
                return await Scheduler({model.name: iface}, SchedulerLimits()).run("response_collection", items)
            finally:
                await iface.aclose()

        stats = asyncio.run(go())
        peak = fake.state.peak_in_flight
    assert all(o.status == "ok" for o in outcomes) and len(outcomes) == 600, {o.error for o in outcomes}
    lane = next(iter(stats.lanes.values()))
    assert peak >= 36 and lane.limit >= 40  # the old 5% margin held it near 20


def test_two_models_on_two_servers_keep_their_own_limits() -> None:
    with FakeServer(FakeConfig(latency_ms=30)) as one, FakeServer(FakeConfig(latency_ms=30)) as two:
        outcomes, stats, _ = _run([_model("narrow", one.url + "/v1", max_concurrency=1),
                                   _model("wide", two.url + "/v1", max_concurrency=6)], 24)
        assert one.state.peak_in_flight == 1
        assert two.state.peak_in_flight == 6
    assert all(o.status == "ok" for o in outcomes) and len(outcomes) == 48
    assert len(stats.lanes) == 2


def test_models_sharing_an_endpoint_share_the_smallest_limit() -> None:
    with FakeServer(FakeConfig(latency_ms=30)) as fake:
        url = fake.url + "/v1"
        _run([_model("a", url, max_concurrency=8), _model("b", url, max_concurrency=2)], 16)
        assert fake.state.peak_in_flight == 2


@pytest.mark.slow
def test_two_replicas_one_killed_mid_run_every_item_ok_and_both_served() -> None:
    first, second = FakeServer(FakeConfig(latency_ms=40)).start(), FakeServer(FakeConfig(latency_ms=40)).start()
    try:
        killer = threading.Timer(1.0, second.stop)
        killer.start()
        outcomes, _, wall = _run([_model("replicated", [first.url + "/v1", second.url + "/v1"], concurrency=4,
                                         max_concurrency=4)], 200)
        killer.join()
        assert wall > 1.0
        assert len(outcomes) == 200 and all(o.status == "ok" for o in outcomes), [o.error for o in outcomes if o.error][:3]
        assert all(o.attempts == 1 for o in outcomes)  # no attempt spent on the dead replica
        assert first.counts["openai.chat"] > 0 and second.counts["openai.chat"] > 0
    finally:
        first.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_a_server_that_comes_up_late_is_waited_for(capsys: Any) -> None:
    port = _free_port()
    late: list[FakeServer] = []
    starter = threading.Timer(2.0, lambda: late.append(FakeServer(port=port).start()))
    starter.start()
    try:
        outcomes, _, wall = _run([_model("late", f"http://127.0.0.1:{port}/v1", connect_wait_s=30)], 10)
    finally:
        starter.join()
        for server in late:
            server.stop()
    assert wall >= 2.0
    assert len(outcomes) == 10 and all(o.status == "ok" and o.attempts == 1 for o in outcomes)


def test_an_absent_server_fails_after_connect_wait_naming_the_url() -> None:
    port = _free_port()
    outcomes, _, wall = _run([_model("absent", f"http://127.0.0.1:{port}/v1", connect_wait_s=1)], 3)
    assert all(o.status == "failed" for o in outcomes)
    assert f"127.0.0.1:{port}" in (outcomes[0].error or "") and "connect_wait_s" in (outcomes[0].error or "")
    assert 1.0 <= wall < 10


def test_dry_run_prints_the_exact_request_body_with_server_names(tmp_path: Any) -> None:
    import yaml
    from click.testing import CliRunner
    from coeval.cli.main import cli

    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({
        "models": [{"name": "local", "interface": "vllm", "roles": ["teacher", "student", "judge"],
                    "parameters": {"model": "m", "base_url": "http://127.0.0.1:1/v1", "server": "llamacpp",
                                   "repetition_penalty": 1.1, "max_tokens": 32, "extra_body": {"cache_prompt": True}}}],
        "tasks": [{"name": "t", "description": "d", "target_attributes": {"a": ["x"]}, "rubric": {"r": "c"},
                   "sampling": {"total": 1}}],
        "experiment": {"id": "dry", "storage_folder": str(tmp_path / "runs")},
    }))
    result = CliRunner().invoke(cli, ["run", "--config", str(config), "--dry-run"])
    assert result.exit_code == 0, result.output
    body = result.output.split("request body of local (vllm):\n", 1)[1].split("\nDry run:", 1)[0]
    import json

    assert json.loads(body) == {"model": "m", "messages": [{"role": "user", "content": "<prompt>"}], "max_tokens": 32,
                                "repeat_penalty": 1.1, "cache_prompt": True}


def test_plan_and_dry_run_show_the_lanes_with_their_bound(tmp_path: Any) -> None:
    import yaml
    from click.testing import CliRunner
    from coeval.cli.main import cli

    config = tmp_path / "c.yaml"
    models = [{"name": n, "interface": "vllm", "roles": ["teacher", "student", "judge"],
               "parameters": {"model": n, "base_url": url, **extra}}
              for n, url, extra in [("a", "http://127.0.0.1:8001/v1", {"max_concurrency": 4}),
                                    ("b", "http://127.0.0.1:8001/v1", {"max_concurrency": 32}),
                                    ("c", "http://127.0.0.1:8002/v1", {})]]
    config.write_text(yaml.safe_dump({
        "models": models,
        "tasks": [{"name": "t", "description": "d", "target_attributes": {"a": ["x"]}, "rubric": {"r": "c"},
                   "sampling": {"total": 1}}],
        "experiment": {"id": "lanes", "storage_folder": str(tmp_path / "runs")},
    }))
    result = CliRunner().invoke(cli, ["run", "--config", str(config), "--dry-run"])
    assert result.exit_code == 0, result.output
    lines = [line.strip() for line in result.output.splitlines() if line.startswith("  vllm@")]
    assert [line.split(":e3b0c442: ")[1] for line in lines] == [
        "a, b (at most 4 in flight, latency-aware)", "c (at most 256 in flight, latency-aware)"]
