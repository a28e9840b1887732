"""``coeval status`` shows the run's lanes: a student served by two replicas gets one row
per replica (calls, final limit, latency p50/p95, times down), in the table and in --json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval_testing.fake_server import FakeServer
from coeval_testing.fake_server._state import FakeConfig


def _config(tmp_path: Path, urls: list[str]) -> Path:
    config: dict[str, Any] = {
        "models": [
            {"name": "local", "interface": "vllm", "roles": ["student"],
             "parameters": {"model": "m", "base_url": urls, "max_tokens": 32}},
            {"name": "worker", "interface": "mock", "roles": ["teacher", "judge"]},
        ],
        "tasks": [{"name": "t", "description": "Answer a short question.", "target_attributes": {"topic": ["a", "b"]},
                   "rubric": {"correct": "The answer is right."}, "sampling": {"total": 6},
                   "evaluation_mode": "single"}],
        "experiment": {"id": "lanes", "storage_folder": str(tmp_path / "runs"), "probe_mode": "disable"},
    }
    path = tmp_path / "lanes.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def test_status_shows_one_lane_per_replica(tmp_path: Path) -> None:
    with FakeServer(FakeConfig(latency_ms=20)) as one, FakeServer(FakeConfig(latency_ms=20)) as two:
        urls = [one.url + "/v1", two.url + "/v1"]
        result = CliRunner().invoke(cli, ["run", "--config", str(_config(tmp_path, urls))])
        served = {urls[0]: one.counts["openai.chat"], urls[1]: two.counts["openai.chat"]}
    assert result.exit_code == 0, result.output
    run = tmp_path / "runs" / "lanes"
    assert (run / "lanes.json").is_file()

    shown = CliRunner().invoke(cli, ["status", "--run", str(run), "--json"])
    assert shown.exit_code == 0, shown.output
    rows = json.loads(shown.output)["lanes"]["response_collection"]["lanes"]
    replicas = {row["url"]: row for row in rows}
    assert set(replicas) == set(urls)
    assert sum(row["calls"] for row in rows) == 6 == sum(served.values())
    for url, row in replicas.items():
        assert row["calls"] == served[url] and row["models"] == ["local"] and row["queue_aware"] is True
        assert row["ejections"] == 0 and row["final_limit"] >= 1
        assert row["calls"] == 0 or row["latency_p50_ms"] >= 20.0

    table = CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["status", "--run", str(run)])
    assert table.exit_code == 0, table.output
    assert "lanes (per endpoint or replica" in table.output
    assert all(url in table.output for url in urls)
    assert "response_collection" in table.output and "mock:worker" in table.output
