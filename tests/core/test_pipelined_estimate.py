"""The time estimate of pipelined phases: phases 3-5 run at once (``coeval run``'s
default), so a run whose phases use different connections takes about the longest of them,
not their sum; one by one, or where the run does not pipeline, the phases add up."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pluggy
import pytest
from coeval import RegisterInterface, hookimpl
from coeval.config.model import ModelConfig
from coeval.interfaces.base import GenerateRequest, GenerateResult, Interface
from coeval.planning.cost import CostEstimate, estimate_cost
from coeval.planning.cost.estimate import _CLIENT_START_S, _PHASE_START_S
from coeval.plugins.manager import registries

from .pipeline_support import folder, make_config, mock_model, run, task

PIPELINED = ("data_generation", "response_collection", "evaluation")
PROVIDERS = ("paced-a", "paced-b", "paced-c")


class _Paced(Interface):
    """A paid provider timed by its typical speed: with ``samples=0`` the estimate makes no
    call, and each call takes seconds (a slow reply), so the phases' starts and the run's
    CPU are small beside their round trips."""

    name = "paced"

    def __init__(self, model: ModelConfig, credentials: object = None) -> None:
        super().__init__(model)

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        raise AssertionError("an estimate with samples=0 makes no call")


class _PacedPlugin:
    @hookimpl
    def register_interfaces(self, register: RegisterInterface) -> None:
        for name in PROVIDERS:  # one connection (lane) each
            register(name, _Paced, requires_model=False, tokens_per_s=5.0)


@pytest.fixture(autouse=True)
def _paced(pm: pluggy.PluginManager) -> None:
    pm.register(_PacedPlugin(), name="paced-test")


def _model(name: str, interface: str, roles: list[str] | None = None) -> dict[str, Any]:
    model: dict[str, Any] = {"name": name, "interface": interface, "access_key": "key-for-the-test",
                             "parameters": {"model": name}}
    if roles:
        model["roles"] = roles
    else:
        model["roles"] = ["teacher", "student", "judge"]
    return model


def _apart() -> list[dict[str, Any]]:
    """A teacher, a student and a judge, each on a connection of its own."""
    return [_model("teach", "paced-a", ["teacher"]), _model("learn", "paced-b", ["student"]),
            _model("grade", "paced-c", ["judge"])]  # fmt: skip


def _estimate(tmp_path: Path, models: list[dict[str, Any]], *, pipeline: bool = True,
              only_models: tuple[str, ...] = (), **experiment: Any) -> CostEstimate:
    cfg = make_config(tmp_path, models, [task(total=40)], **experiment)
    return estimate_cost(cfg, samples=0, registries=registries(), pipeline=pipeline, only_models=only_models)


def _call_s(estimate: CostEstimate, phase: str) -> float:
    cells = [c for c in estimate.cells if c.phase == phase and c.calls]
    return sum(c.seconds for c in cells) / sum(c.calls for c in cells)


def test_phases_on_their_own_connections_overlap_when_pipelined(tmp_path: Path) -> None:
    one_by_one = _estimate(tmp_path, _apart(), pipeline=False)
    pipelined = _estimate(tmp_path, _apart())
    assert one_by_one.pipelined_overlap_s == 0.0
    assert one_by_one.seconds == pytest.approx(sum(one_by_one.phase_seconds.values()))
    # each phase is timed as before; the run as a whole is shorter by the overlap
    assert pipelined.phase_seconds == one_by_one.phase_seconds
    assert pipelined.seconds == pytest.approx(one_by_one.seconds - pipelined.pipelined_overlap_s)
    # one lane per phase: the three take the longest phase's round trips, each phase's start
    # (the first also starts the provider's client), and one call of each downstream phase
    # after its upstream's last record
    starts = {p: _PHASE_START_S + (_CLIENT_START_S if p == "data_generation" else 0.0) for p in PIPELINED}
    busy = [pipelined.phase_seconds[p] - starts[p] for p in PIPELINED]
    together = (max(busy) + sum(starts.values()) + _call_s(pipelined, "response_collection")
                + _call_s(pipelined, "evaluation"))
    others = sum(s for p, s in pipelined.phase_seconds.items() if p not in PIPELINED)
    assert pipelined.seconds == pytest.approx(others + together)
    # never shorter than its longest phase: the downstream phases' last calls follow their upstream's
    longest = max(pipelined.phase_seconds[p] for p in PIPELINED)
    assert longest < pipelined.seconds < one_by_one.seconds
    assert pipelined.to_dict()["pipelined_overlap_seconds"] == round(pipelined.pipelined_overlap_s, 1)


def test_phases_sharing_one_connection_add_up_when_pipelined(tmp_path: Path) -> None:
    """One model in every role: one lane carries every phase, so running them at once
    saves nothing on the round trips."""
    shared = _estimate(tmp_path, [_model("solo", "paced-a")])
    assert shared.pipelined_overlap_s == 0.0
    assert shared.seconds == pytest.approx(sum(shared.phase_seconds.values()))


@pytest.mark.parametrize("why", ["keep", "shard"])
def test_no_overlap_where_the_run_does_not_pipeline(tmp_path: Path, why: str) -> None:
    if why == "keep":  # Keep decides from what exists when the phase starts
        estimate = _estimate(tmp_path, _apart(), phases={"response_collection": "Keep"})
    else:  # --only-models: other processes write the same folder
        estimate = _estimate(tmp_path, _apart(), only_models=("teach", "learn", "grade"))
    assert estimate.pipelined_overlap_s == 0.0
    assert estimate.seconds == pytest.approx(sum(estimate.phase_seconds.values()))


@pytest.mark.parametrize("pipeline", [True, False])
def test_the_runs_own_estimate_times_the_phases_as_the_run_takes_them(tmp_path: Path, pipeline: bool) -> None:
    """``cost_estimate.json``, written before the first phase for ``coeval status``, follows
    ``--pipeline/--no-pipeline``."""
    mocks = [mock_model(name, [role], latency_ms=50) for name, role in
             (("teach", "teacher"), ("learn", "student"), ("grade", "judge"))]  # fmt: skip
    cfg = make_config(tmp_path, mocks, [task(total=100)])
    assert run(cfg, pipeline=pipeline).exit_code == 0
    recorded = json.loads((folder(cfg).root / "cost_estimate.json").read_text(encoding="utf-8"))
    assert (recorded["pipelined_overlap_seconds"] > 0) is pipeline
