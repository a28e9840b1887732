"""The time estimate's parts: the limiter's slow start, calls that run one at a time, the
run's own CPU, and sample calls whose first call per client only starts the client."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pluggy
import pytest
from coeval import RegisterInterface, hookimpl
from coeval.config.model import ModelConfig
from coeval.interfaces.base import GenerateRequest, GenerateResult, Interface, Usage
from coeval.planning.cost import estimate as estimate_module
from coeval.planning.cost import estimate_cost
from coeval.planning.cost.estimate import (
    _PHASE_START_S,
    _RUN_CPU_PER_CALL_S,
    _SDK_CPU_PER_CALL_S,
    _slow_start,
)
from coeval.planning.cost.measure import Measured
from coeval.planning.cost.samples import SampleResults, _gather_warm
from coeval.plugins.config_loading import load_config
from coeval.plugins.manager import registries


def test_slow_start_doubles_per_round_trip_then_runs_at_the_top() -> None:
    # 4 in flight, one more per answer: 4, 8, 16, 32 answered in four round trips, the last 40 in a fifth
    assert _slow_start(100, 1.0, 4, 512) == (5.0, 104)
    # at the top: top calls per round trip, no round trip lost to growth
    assert _slow_start(1024, 0.2, 512, 512) == (pytest.approx(0.4), 512)
    # the top caps the growth: 8 -> 10 after the first round trip, then 10 per round trip
    seconds, limit = _slow_start(38, 0.5, 8, 10)
    assert (seconds, limit) == (pytest.approx(0.5 + 30 * 0.5 / 10), 10)
    # instant calls take no time but still raise the limit
    assert _slow_start(50, 0.0, 16, 512) == (0.0, 66)


@pytest.mark.parametrize("factor", [1.0, 1.5])
def test_an_instant_mock_run_is_timed_by_its_cpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  factor: float) -> None:
    """With no latency, a phase takes the run's own CPU per call, not zero, at the speed
    this machine runs such work now (1.5: half as long again as the reference machine)."""
    monkeypatch.setattr(estimate_module, "speed_factor", lambda: factor)
    monkeypatch.chdir(tmp_path)
    Path("exp.yaml").write_text(_CONFIG, encoding="utf-8")
    estimate = estimate_cost(load_config("exp.yaml"), samples=0, registries=registries())
    for phase, seconds in estimate.phase_seconds.items():
        calls = sum(c.calls for c in estimate.cells if c.phase == phase)
        expected = _PHASE_START_S + calls * _RUN_CPU_PER_CALL_S * factor if calls else 0.0
        assert seconds == pytest.approx(expected, abs=1e-9), phase


@pytest.mark.parametrize("factor", [1.0, 1.5])
def test_a_run_through_a_provider_sdk_is_timed_by_its_cpu_and_the_sdks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, factor: float) -> None:
    """A phase of many calls through an SDK with room for all of them in flight takes the
    run's CPU and the SDK's per call, both at the speed this machine runs such work now."""
    monkeypatch.setattr(estimate_module, "speed_factor", lambda: factor)
    monkeypatch.setattr(estimate_module, "load_share", lambda: 1.0)  # the server has a core of its own
    monkeypatch.chdir(tmp_path)
    wide = "{model: gpt-4o-mini, base_url: 'http://127.0.0.1:9/v1', concurrency: 100000, max_concurrency: 100000}"
    config = (_CONFIG.replace("interface: mock", "interface: openai").replace("{seed: 1}", wide)
              .replace("{seed: 2}", wide).replace("total: 4", "total: 20000"))
    Path("exp.yaml").write_text(config, encoding="utf-8")
    estimate = estimate_cost(load_config("exp.yaml"), samples=0, registries=registries(), pipeline=False)
    per_call = (_RUN_CPU_PER_CALL_S + _SDK_CPU_PER_CALL_S) * factor
    judged = sum(c.calls for c in estimate.cells if c.phase == "evaluation")
    assert judged == 80_000  # 20,000 datapoints x 2 students x 2 judges
    assert estimate.phase_seconds["evaluation"] == pytest.approx(_PHASE_START_S + judged * per_call, rel=1e-9)


class _SlowFirst(Interface):
    """Its first call takes 0.3 s more (a client starting), the others 0.02 s."""

    name = "slow-first"

    def __init__(self, model: ModelConfig, log: list[str]) -> None:
        super().__init__(model)
        self.log, self.started = log, False

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        cold = not self.started
        self.started = True
        self.log.append(f"{self.model.name}:{'cold' if cold else 'warm'}:start")
        await asyncio.sleep(0.32 if cold else 0.02)
        return GenerateResult("ok", Usage(10, 2))


def test_sample_calls_run_each_clients_first_call_apart_and_untimed() -> None:
    log: list[str] = []
    ifaces = {n: _SlowFirst(ModelConfig(n, "slow-first"), log) for n in ("a", "b")}
    req = GenerateRequest(prompt="p", params={})
    jobs = [("a", "t", req), ("a", "t", req), ("b", "t", req), ("b", "t", req)]
    warm: set[str] = set()
    started = time.perf_counter()
    outcomes, cold = asyncio.run(_gather_warm(jobs, ifaces, warm, 5.0))
    assert cold == [True, False, True, False]
    assert warm == {"a", "b"}
    # the first calls went out alone; the others after them, and were timed as warm calls
    assert log[:2] == ["a:cold:start", "b:cold:start"] and sorted(log[2:]) == ["a:warm:start", "b:warm:start"]
    assert [round(latency, 1) for _, latency in outcomes] == [0.3, 0.0, 0.3, 0.0]
    assert time.perf_counter() - started < 1.0  # each group ran concurrently
    # a later phase's calls of warmed clients are all timed
    outcomes, cold = asyncio.run(_gather_warm(jobs[:2], ifaces, warm, 5.0))
    assert cold == [False, False]


class _SlowFirstPerClient(Interface):
    """A provider whose client's first call takes 0.3 s longer (its start), all 0.02 s after."""

    name = "slowstart"

    def __init__(self, model: ModelConfig, credentials: object = None) -> None:
        super().__init__(model)
        self.started = False

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        cold, self.started = not self.started, True
        await asyncio.sleep(0.32 if cold else 0.02)
        return GenerateResult('{"prompt": "What is 2 + 2?", "reference_response": "4"}', Usage(20, 10))


class _SlowStartPlugin:
    @hookimpl
    def register_interfaces(self, register: RegisterInterface) -> None:
        register("slowstart", _SlowFirstPerClient, requires_model=False)


def test_plan_times_calls_by_warm_samples_and_adds_the_clients_start_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pm: pluggy.PluginManager
) -> None:
    pm.register(_SlowStartPlugin(), name="slowstart-test")
    monkeypatch.chdir(tmp_path)
    slow = "interface: slowstart, access_key: key-for-the-test"  # a provider: sampled only with a key
    Path("exp.yaml").write_text(_CONFIG.replace("interface: mock", slow), encoding="utf-8")
    estimate = estimate_cost(load_config("exp.yaml"), samples=2, registries=registries())
    timed = [c for c in estimate.cells if c.calls]
    assert timed and all(c.seconds / c.calls == pytest.approx(0.02, abs=0.015) for c in timed)  # warm calls only
    first, *later = [estimate.phase_seconds[p] for p in ("data_generation", "response_collection", "evaluation")]
    assert first >= _PHASE_START_S + 0.25  # the client's start, measured by the cold calls, once
    assert all(s < _PHASE_START_S + 0.2 for s in later)


class _OneAtATimeEngine(Interface):
    """A local engine that every model shares and that runs one call at a time, 0.1 s each
    (llama.cpp on this machine's cores): calls sent together wait behind each other."""

    name = "serial-engine"
    busy: asyncio.Lock | None = None

    def __init__(self, model: ModelConfig, credentials: object = None) -> None:
        super().__init__(model)

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        if _OneAtATimeEngine.busy is None:
            _OneAtATimeEngine.busy = asyncio.Lock()
        async with _OneAtATimeEngine.busy:
            await asyncio.sleep(0.1)
        return GenerateResult('{"prompt": "What is 2 + 2?", "reference_response": "4"}', Usage(20, 10))


class _OneAtATimePlugin:
    @hookimpl
    def register_interfaces(self, register: RegisterInterface) -> None:
        register("serial-engine", _OneAtATimeEngine, requires_model=False, one_at_a_time=True)


def test_sample_calls_of_an_engine_that_runs_one_call_at_a_time_are_timed_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pm: pluggy.PluginManager
) -> None:
    """Sent together, two models' samples on one llama.cpp engine were each timed with the
    wait behind the others: the quick start's plan said 290 s for a 120 s run."""
    pm.register(_OneAtATimePlugin(), name="serial-engine-test")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(_OneAtATimeEngine, "busy", None)
    engine = "interface: serial-engine, access_key: key-for-the-test"
    Path("exp.yaml").write_text(_CONFIG.replace("interface: mock", engine), encoding="utf-8")
    estimate = estimate_cost(load_config("exp.yaml"), samples=3, registries=registries())
    timed = [c for c in estimate.cells if c.calls]
    assert {c.phase for c in timed} == {"data_generation", "response_collection", "evaluation"}
    for c in timed:  # each call's own 0.1 s, not 0.1 s times the calls queued with it
        assert c.seconds / c.calls == pytest.approx(0.1, abs=0.03), (c.phase, c.model)


def test_a_phase_sampled_only_cold_takes_the_models_latency_from_its_other_phases() -> None:
    results = SampleResults()
    cold, warm = Measured(), Measured()
    cold.add(10, 5, 10, None, 5)  # its only call started the client: not timed
    warm.add(10, 5, 10, 0.25, 5)
    warm.add(10, 5, 10, 0.35, 5)
    results.measured = {("data_generation", "m", "t"): cold, ("evaluation", "m", "t"): warm}
    assert results.latency("data_generation", "m") == pytest.approx(0.3)
    assert results.latency("evaluation", "m") == pytest.approx(0.3)
    assert results.latency("evaluation", "other") is None


_CONFIG = """
models:
  - {name: m1, interface: mock, roles: [teacher, student, judge], parameters: {seed: 1}}
  - {name: m2, interface: mock, roles: [student, judge], parameters: {seed: 2}}
tasks:
  - name: t
    description: Answer a short question.
    output_description: A short answer.
    target_attributes: {tone: [formal, casual]}
    nuanced_attributes: {}
    sampling: {target: [1, 1], nuance: [0, 0], total: 4}
    rubric: {accuracy: The answer is correct.}
    evaluation_mode: single
experiment: {id: time-est, storage_folder: runs, probe_mode: disable}
"""
