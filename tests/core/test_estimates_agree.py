"""`run`'s pre-spend estimate, `plan --estimate-samples 0` and `describe` give one answer:
the same calls, and tokens within 2% of each other (issue 25, item 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from coeval.authoring.describe import describe_html
from coeval.cli.main import cli
from coeval.plugins.config_loading import load_config
from coeval.plugins.manager import registries

#: mock teachers write short datapoints, far from a typical model's size: the heuristic
#: stand-ins must not be used for a model the estimate can measure for free
CONFIG = """\
models:
  - {name: teach-a, interface: mock, parameters: {seed: 3, latency_ms: 40}, roles: [teacher, judge]}
  - {name: teach-b, interface: mock, parameters: {seed: 4, failure_rate: 0.3}, roles: [teacher, student]}
  - {name: stud-c, interface: mock, parameters: {seed: 5}, roles: [student, judge],
     role_parameters: {student: {max_tokens: 256}, judge: {max_tokens: 128}}}
tasks:
  - name: summarise
    description: Summarise a short news story.
    output_description: Two sentences.
    target_attributes: {length: [short, long], tone: [neutral, lively]}
    sampling: {target: [1, 2], total: 6}
    rubric: {accuracy: "Facts are right.", brevity: "No padding.", clarity: "Easy to read."}
    evaluation_mode: single
  - name: email
    description: Write an email for the stated purpose.
    output_description: A complete email with a greeting, a body and a closing.
    target_attributes: {purpose: [request, apology], formality: [casual, formal]}
    sampling: {target: [1, 2], total: 6}
    rubric: {purpose: "The email achieves its purpose.", tone: "The tone fits."}
    evaluation_mode: per_factor
experiment:
  id: agree
  storage_folder: ./runs
"""


def _close(a: float, b: float, share: float = 0.02) -> bool:
    return abs(a - b) <= share * max(a, b)


def test_run_plan_and_describe_estimates_agree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("exp.yaml").write_text(CONFIG, encoding="utf-8")
    runner = CliRunner()
    res = runner.invoke(cli, ["plan", "exp.yaml", "--estimate-samples", "0", "--json"])
    assert res.exit_code == 0, res.output
    plan = json.loads(res.stdout)
    res = runner.invoke(cli, ["run", "exp.yaml", "--estimate-only"])  # the default: sample calls
    assert res.exit_code == 0, res.output
    run = json.loads((tmp_path / "runs" / "agree" / "cost_estimate.json").read_text(encoding="utf-8"))
    page = describe_html(load_config("exp.yaml"), registries=registries())

    assert plan["total_calls"] == run["total_calls"] > 0
    assert f"{plan['total_calls']:,}" in page
    for key in ("total_input_tokens", "total_output_tokens"):
        assert _close(plan[key], run[key]), (key, plan[key], run[key])
        assert f"{plan[key]:,}" in page, key
    for phase, figures in plan["phases"].items():
        assert figures["calls"] == run["phases"][phase]["calls"]
        assert _close(figures["input_tokens"], run["phases"][phase]["input_tokens"]), phase
        assert _close(figures["output_tokens"], run["phases"][phase]["output_tokens"]), phase
    assert _close(plan["estimated_seconds"], run["estimated_seconds"], 0.05)


def test_plan_learns_time_and_tokens_from_a_past_run_of_the_config(tmp_path, monkeypatch):
    """A run folder of the config is there: `plan` times each phase at the pace the run kept
    (meta.json's phase log: seconds per record written) and sizes calls by their usage."""
    monkeypatch.chdir(tmp_path)
    Path("exp.yaml").write_text(CONFIG, encoding="utf-8")
    runner = CliRunner()
    before = json.loads(runner.invoke(cli, ["plan", "exp.yaml", "--estimate-samples", "0", "--json"]).stdout)
    assert runner.invoke(cli, ["run", "exp.yaml"]).exit_code == 0
    meta_path = tmp_path / "runs" / "agree" / "meta.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    for entry in meta["phase_log"]:  # pretend the evaluation phase was slow: 100 s for its records
        if entry["phase"] == "evaluation":
            entry["started_at"], entry["finished_at"] = "2026-01-01T00:00:00Z", "2026-01-01T00:01:40Z"
            written = entry["written"]
    meta_path.write_text(json.dumps(meta), encoding="utf-8")
    res = runner.invoke(cli, ["plan", "exp.yaml", "--estimate-samples", "0", "--json"])
    assert res.exit_code == 0, res.output
    after = json.loads(res.stdout)
    evaluation = after["phases"]["evaluation"]
    assert evaluation["calls"] == written
    assert abs(evaluation["seconds"] - 100.0) < 0.5  # the same calls at the measured pace
    assert before["phases"]["evaluation"]["seconds"] < 10
    assert any("past run" in note for note in after["notes"])
    assert "history" in after["models"]["stud-c"]["sources"]


def test_each_mock_model_is_its_own_lane_in_the_time_estimate(tmp_path, monkeypatch):
    """The scheduler gives every mock model its own lane (``connection_key``): two judges
    at 100 ms, one call in flight each (the mock's bounds, which the scheduler reads from
    the interface as the estimate does), run side by side, not in one shared pool."""
    from coeval.interfaces.mock import MockInterface
    from coeval.planning.cost import estimate_cost
    from coeval.planning.cost.estimate import _PHASE_START_S

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(MockInterface, "default_concurrency", 1)
    monkeypatch.setattr(MockInterface, "max_concurrency", 1)
    Path("exp.yaml").write_text(CONFIG.replace("{seed: 3, latency_ms: 40}", "{seed: 3, latency_ms: 100}")
                                .replace("{seed: 5}", "{seed: 5, latency_ms: 100}"), encoding="utf-8")
    estimate = estimate_cost(load_config("exp.yaml"), samples=0, registries=registries())
    judges = [c for c in estimate.cells if c.phase == "evaluation" and c.calls]
    per_judge = {name: sum(c.calls for c in judges if c.model == name) for name in ("teach-a", "stud-c")}
    expected = _PHASE_START_S + max(per_judge.values()) * 0.1  # lanes in parallel, one in flight each
    assert min(per_judge.values()) > 0
    assert estimate.phase_seconds["evaluation"] == pytest.approx(expected, abs=1e-9)
