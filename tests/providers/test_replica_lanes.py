"""Per-replica lanes: two replicas of different capacity behind one model each settle near
their own capacity. Real ``openai`` SDK over real HTTP against two local fake servers that
serve N calls at once and queue the rest."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval.config.model import ModelConfig
from coeval.interfaces.base import GenerateRequest
from coeval.plugins.manager import registries
from coeval.scheduler import Scheduler, SchedulerLimits, WorkItem, WorkOutcome
from coeval_testing.fake_server import FakeServer
from coeval_testing.fake_server._state import FakeConfig


def _run(model: ModelConfig, n: int) -> tuple[list[WorkOutcome], Any, float]:
    iface = registries().interfaces.get(model.interface)(model, None)
    outcomes: list[WorkOutcome] = []
    items = [WorkItem(key=f"i{i}", phase="response_collection", model=model, on_done=outcomes.append,
                      request=GenerateRequest(prompt=f"question {i}", params=model.parameters)) for i in range(n)]

    async def go() -> Any:
        try:
            return await Scheduler({model.name: iface}, SchedulerLimits()).run("response_collection", items)
        finally:
            await iface.aclose()

    start = time.perf_counter()
    stats = asyncio.run(go())
    return outcomes, stats, time.perf_counter() - start


@pytest.mark.slow
def test_two_replicas_of_different_capacity_each_settle_near_their_own() -> None:
    # big: 8 slots, small: 2 slots, both 100 ms per call; together 100 calls/s
    with FakeServer(FakeConfig(slots=8, latency_ms=100, log_bodies=False)) as big, \
            FakeServer(FakeConfig(slots=2, latency_ms=100, log_bodies=False)) as small:
        urls = [small.url + "/v1", big.url + "/v1"]
        model = ModelConfig(name="replicated", interface="vllm", roles=("student",),
                            parameters={"model": "m", "base_url": urls, "timeout": 1, "max_tokens": 16})
        outcomes, stats, _ = _run(model, 200)
        requests = {"big": big.counts["openai.chat"], "small": small.counts["openai.chat"]}
    assert len(outcomes) == 200 and all(o.status == "ok" for o in outcomes), [o.error for o in outcomes][:3]
    assert requests["big"] + requests["small"] <= 220  # at most 10% more requests than items
    lanes = {lane.url: lane for lane in stats.lanes.values()}
    assert set(lanes) == set(urls)  # one lane per replica
    small_lane, big_lane = lanes[urls[0]], lanes[urls[1]]
    # the small one is not flooded: its limit holds below capacity + 2 * alpha (2 + 4) and
    # may overshoot by one round trip's answers before latency shows the queue (a busy CI
    # machine saw 7); a limiter blind to queueing would follow the big one past 8
    assert small_lane.peak_in_flight <= 2 + 2 * 2 + 2
    assert requests["big"] >= 2 * requests["small"]  # the big one served clearly more
    assert big_lane.limit > small_lane.limit
    assert big_lane.calls == requests["big"] and small_lane.calls == requests["small"]
    # throughput (both replicas kept busy) is measured by `nox -s bench`, not timed here


def test_an_openai_model_on_a_local_server_gets_the_latency_limiter() -> None:
    def iface(base_url: Any, **extra: Any) -> Any:
        params = {"model": "gpt-4o-mini", **({"base_url": base_url} if base_url else {}), **extra}
        model = ModelConfig(name="m", interface="openai", roles=("student",), parameters=params)
        return registries().interfaces.get("openai")(model, None)

    assert iface("http://127.0.0.1:8000/v1").queue_aware is True
    assert iface(["http://10.0.0.5:8000/v1", "http://gpu2:8000/v1"]).queue_aware is True
    assert iface("http://vllm.internal:8000/v1").queue_aware is True
    assert iface(None).queue_aware is False  # api.openai.com: 429s drive the limit
    assert iface("https://llm.example.com/v1").queue_aware is False
    assert iface("https://llm.example.com/v1", self_hosted=True).queue_aware is True
    assert iface("http://127.0.0.1:8000/v1", self_hosted=False).queue_aware is False
    # a self-hosted lane starts low unless concurrency says otherwise; a hosted one keeps its start
    assert iface("http://127.0.0.1:8000/v1").default_concurrency == 4
    assert iface("http://127.0.0.1:8000/v1", concurrency=32).default_concurrency == 32
    assert iface(None).default_concurrency == 32


def test_dry_run_says_the_bound_holds_on_each_replica(tmp_path: Any) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({
        "models": [{"name": "q", "interface": "openai", "roles": ["teacher", "student", "judge"],
                    "parameters": {"model": "q", "max_concurrency": 8,
                                   "base_url": ["http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"]}}],
        "tasks": [{"name": "t", "description": "d", "target_attributes": {"a": ["x"]}, "rubric": {"r": "c"},
                   "sampling": {"total": 1}}],
        "experiment": {"id": "replicas", "storage_folder": str(tmp_path / "runs")},
    }))
    result = CliRunner(env={"OPENAI_API_KEY": "sk-test-not-used"}).invoke(cli, ["run", "--config", str(config), "--dry-run"])
    assert result.exit_code == 0, result.output
    [line] = [line.strip() for line in result.output.splitlines() if line.startswith("  openai@")]
    assert line.endswith(": q (at most 8 in flight on each of 2 replicas, latency-aware)")


def test_replica_urls_shown_in_lanes_carry_no_credentials() -> None:
    model = ModelConfig(name="m", interface="vllm", roles=("student",),
                        parameters={"model": "m", "base_url": ["http://user:s3cret@10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"]})
    iface = registries().interfaces.get("vllm")(model, None)
    assert [url for url, _ in iface.replica_views()] == ["http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"]
    assert "s3cret" not in iface.connection_key()
