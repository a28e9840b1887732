"""The benchmark interface: a virtual teacher that replays datapoints and never calls out."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from coeval.config.model import ModelConfig
from coeval.interfaces.base import FatalModelError, GenerateRequest
from coeval.plugins.manager import registries
from coeval.storage import RunFolder
from coeval_benchmarks.adapters.sciq import SciQ
from coeval_benchmarks.ingest import ingest
from coeval_benchmarks.interface import BenchmarkInterface

from tests.benchmarks.conftest import FIXTURES

MODEL = ModelConfig(name="sciq-benchmark", interface="benchmark", roles=("teacher",))


def test_registered_as_a_virtual_teacher_needing_no_model() -> None:
    entry = registries().interfaces.entry("benchmark")
    assert entry.value is BenchmarkInterface and entry.plugin == "benchmarks"
    assert entry.options == {"requires_model": False, "virtual_teacher": True}


def test_generate_refuses_with_a_fatal_error_naming_the_model() -> None:
    interface = BenchmarkInterface(MODEL)
    with pytest.raises(FatalModelError, match="'sciq-benchmark' uses interface 'benchmark'") as info:
        asyncio.run(interface.generate(GenerateRequest(prompt="hi", role="student")))
    assert not info.value.retryable


def test_probe_succeeds_without_a_call() -> None:
    assert asyncio.run(BenchmarkInterface(MODEL).probe()) is None


def test_replay_yields_the_ingested_datapoints(finished_run: Path) -> None:
    run = RunFolder(finished_run)
    ingest(run, SciQ(), data_dir=FIXTURES)
    replayed = list(BenchmarkInterface(MODEL).replay(run, "sciq"))
    assert [d["benchmark_native_id"] for d in replayed] == ["test-00000", "test-00001"]
    assert list(BenchmarkInterface(MODEL).replay(run, "other-task")) == []
