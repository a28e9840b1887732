"""The time estimate of llama.cpp models: calls run one at a time (they are added up, not
overlapped), each taking the engine's time per token for the model's file and threads."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from coeval.config import load_config
from coeval.config.model import ModelConfig
from coeval.contract.manager import registries
from coeval.planning.cost import estimate_cost
from coeval.planning.cost.estimate import _LOCAL_CALL_S, _PHASE_START_S
from coeval_hf.embedded import embedded_model_path
from coeval_hf.llamacpp import SECONDS_PER_TOKEN_GB_THREAD, seconds_per_token

ROOT = Path(__file__).resolve().parents[2]


def test_llamacpp_declares_one_call_at_a_time_and_its_speed_from_the_file() -> None:
    facts = registries().interface_facts("llamacpp")
    assert facts is not None and facts.one_at_a_time and facts.seconds_per_token is seconds_per_token
    size_gb = embedded_model_path("smollm2-135m").stat().st_size / 1e9
    model = ModelConfig("m", "llamacpp", parameters={"model": "smollm2-135m", "threads": 2})
    assert seconds_per_token(model) == pytest.approx(SECONDS_PER_TOKEN_GB_THREAD * size_gb / 2)
    assert seconds_per_token(ModelConfig("m", "llamacpp", parameters={"model": "/no/such.gguf"})) is None


def test_the_quickstart_estimate_adds_up_its_local_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = yaml.safe_load((ROOT / "examples" / "quickstart.yaml").read_text(encoding="utf-8"))
    monkeypatch.chdir(tmp_path)
    Path("exp.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    config = load_config("exp.yaml")
    estimate = estimate_cost(config, samples=0, registries=registries())
    models = {m.name: m for m in config.models}
    for phase, seconds in estimate.phase_seconds.items():
        cells = [c for c in estimate.cells if c.phase == phase and c.calls]
        for c in cells:  # each call: the engine's own cost and its tokens at the file's speed
            per_token = seconds_per_token(models[c.model])
            assert per_token is not None
            tokens = c.input_tokens + c.output_tokens
            assert c.seconds == pytest.approx(c.calls * _LOCAL_CALL_S + per_token * tokens)
        expected = _PHASE_START_S + sum(c.seconds for c in cells) if cells else 0.0
        assert seconds == pytest.approx(expected), phase  # one at a time: the calls add up
    assert estimate.phase_seconds["evaluation"] > 0


def test_the_plans_lane_list_says_llamacpp_calls_run_one_at_a_time() -> None:
    from coeval.cli.lanes_preview import format_lanes

    config = load_config(ROOT / "examples" / "quickstart.yaml", check_filesystem=False)
    lines = [line for line in format_lanes(config).splitlines() if line.startswith("  ")]
    assert lines and all(line.endswith("(at most 8 in flight; the engine runs them one at a time)") for line in lines)
