"""An estimate measures a ``mock`` model's replies with free sample calls, also at
``--estimate-samples 0`` and before every run (for ``coeval status``). Those calls leave out
the mock's simulated latency and faults: they measure reply sizes, and its time comes from
``latency_ms`` itself. When the calls kept them, a mock at 60 s latency held ``coeval run``
four minutes before its first line."""

from __future__ import annotations

import time
from pathlib import Path

from coeval.planning.cost import estimate_cost
from coeval.plugins.config_loading import load_config

from .pipeline_support import task

LATENCY_MS = 10_000


def test_free_sample_calls_leave_out_the_mocks_latency_and_faults(tmp_path: Path) -> None:
    config = load_config({
        "models": [{"name": "slow", "interface": "mock", "roles": ["teacher", "student", "judge"],
                    "parameters": {"latency_ms": LATENCY_MS, "failure_rate": 1.0}}],
        "tasks": [task(total=2)],
        "experiment": {"id": "free", "storage_folder": str(tmp_path / "runs")},
    }, check_filesystem=False)
    started = time.monotonic()
    estimate = estimate_cost(config, samples=0).to_dict()
    took = time.monotonic() - started
    assert not [n for n in estimate["notes"] if "sample call failed" in n]  # no simulated fault
    assert estimate["samples"]["calls_made"] > 0  # measured, not heuristics
    assert took < LATENCY_MS / 2000  # not even one simulated wait (three phases were sampled)
    assert estimate["estimated_seconds"] >= 3 * LATENCY_MS / 1000  # the run's time still counts it
