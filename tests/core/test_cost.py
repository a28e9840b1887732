"""``coeval plan`` and the cost estimate: calls, tokens against a real mock run, prices, --continue."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval.planning.cost import estimate_cost, price_for
from coeval.plugins.config_loading import load_config

ROOT = Path(__file__).parents[2]
EXAMPLES = ROOT / "docs" / "examples"
PHASES = ("attribute_mapping", "rubric_mapping", "data_generation", "response_collection", "evaluation")

#: teachers propose attributes and a rubric for one task; the other is static and per_factor
MOCK_CONFIG = """\
models:
  - {name: teach-a, interface: mock, parameters: {seed: 3}, roles: [teacher, judge]}
  - {name: teach-b, interface: mock, parameters: {seed: 4}, roles: [teacher, student]}
  - {name: stud-c, interface: mock, parameters: {seed: 5}, roles: [student, judge]}
tasks:
  - name: explain
    description: Explain a scientific idea to a curious reader.
    output_description: Three to five clear sentences.
    target_attributes: auto
    nuanced_attributes: auto
    sampling: {target: [1, 2], nuance: [1, 1], total: 6}
    rubric: auto
    evaluation_mode: single
  - name: summarise
    description: Summarise a short news story.
    output_description: Two sentences.
    target_attributes: {length: [short, long], tone: [neutral, lively]}
    sampling: {target: [1, 2], total: 6}
    rubric: {accuracy: "Facts are right.", brevity: "No padding.", clarity: "Easy to read."}
    evaluation_mode: per_factor
experiment:
  id: acc
  storage_folder: ./runs
"""



def plan_json(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["plan", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def used_tokens(run: Path) -> dict[str, list[int]]:
    """phase -> [calls, input tokens, output tokens] from the records' usage."""
    folders = dict(
        zip(
            PHASES,
            (
                "phase1_attributes",
                "phase2_rubric",
                "phase3_datapoints",
                "phase4_responses",
                "phase5_evaluations",
            ),
            strict=True,
        )
    )
    used: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for phase, folder in folders.items():
        for path in (run / folder).iterdir():
            if path.suffix == ".jsonl":
                records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
            elif path.name.endswith(".proposal.json"):
                records = [json.loads(path.read_text(encoding="utf-8"))]
            else:
                continue
            for rec in records:
                usage = rec.get("usage") or {}
                if usage.get("input_tokens") or usage.get("output_tokens"):
                    used[phase][0] += 1
                    used[phase][1] += usage["input_tokens"]
                    used[phase][2] += usage["output_tokens"]
    return used


def test_medium_shape_json(work: Path) -> None:
    shutil.copy(EXAMPLES / "medium-benchmark.yaml", work / "m.yaml")
    data = plan_json("--config", "m.yaml", "--estimate-samples", "0")
    assert data["total_calls"] == 12_400
    assert {p: v["calls"] for p, v in data["phases"].items()} == {
        "attribute_mapping": 0,
        "rubric_mapping": 0,
        "data_generation": 400,
        "response_collection": 2_000,
        "evaluation": 10_000,
    }
    for phase in data["phases"].values():
        assert {"calls", "input_tokens", "output_tokens", "cost_usd"} <= set(phase)
    assert data["total_cost_usd"] == pytest.approx(
        sum(p["cost_usd"] for p in data["phases"].values()), abs=1e-5
    )
    assert data["total_cost_usd"] > 0
    assert not (work / "eval_runs").exists()  # planning writes nothing without --out


def test_per_factor_multiplies_phase5_by_the_factor_count(work: Path) -> None:
    raw = yaml.safe_load((EXAMPLES / "customer-support-per-factor.yaml").read_text(encoding="utf-8"))
    per_factor = estimate_cost(load_config(raw, check_filesystem=False), samples=0)
    raw["tasks"][0]["evaluation_mode"] = "single"
    single = estimate_cost(load_config(raw, check_filesystem=False), samples=0)
    factors = len(raw["tasks"][0]["rubric"])
    assert (
        per_factor.by_phase()["evaluation"]["calls"]
        == factors * single.by_phase()["evaluation"]["calls"]
        == 1_000
    )


def test_label_and_metric_factors_need_no_judge_call(work: Path) -> None:
    raw = yaml.safe_load((EXAMPLES / "sentiment-label.yaml").read_text(encoding="utf-8"))
    raw["tasks"][0]["rubric"] = {"overlap": {"metric": "exact_match"}}
    estimate = estimate_cost(load_config(raw, check_filesystem=False), samples=0)
    assert estimate.by_phase()["evaluation"]["calls"] == 0  # only a label and a metric factor


def test_planned_tokens_match_a_mock_run_within_20_percent(work: Path) -> None:
    (work / "acc.yaml").write_text(MOCK_CONFIG, encoding="utf-8")
    planned = plan_json("--config", "acc.yaml", "--estimate-samples", "2")
    assert planned["samples"]["calls_made"] > 0
    assert not (work / "runs").exists(), "sample calls must not write a run"
    result = CliRunner().invoke(cli, ["run", "--config", "acc.yaml"])
    assert result.exit_code == 0, result.output
    used = used_tokens(work / "runs" / "acc")
    for phase in PHASES:
        plan = planned["phases"][phase]
        calls, tokens_in, tokens_out = used[phase]
        assert plan["calls"] == calls, phase
        assert plan["input_tokens"] == pytest.approx(tokens_in, rel=0.2), phase
        assert plan["output_tokens"] == pytest.approx(tokens_out, rel=0.2), phase


def test_continue_counts_only_the_remaining_work(work: Path) -> None:
    shutil.copy(ROOT / "examples" / "mock_smoke.yaml", work / "smoke.yaml")
    assert CliRunner().invoke(cli, ["run", "--config", "smoke.yaml"]).exit_code == 0
    run = work / "runs" / "mock-smoke"
    kept = (run / "cost_estimate.json").read_bytes()  # the run's own pre-spend estimate
    assert plan_json("--config", "smoke.yaml", "--continue", "--estimate-samples", "0")["total_calls"] == 0

    # lose 7 evaluations of one judge, as a crash or a quota would
    path = next((run / "phase5_evaluations").glob("*.jsonl"))
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(lines[:-7]) + "\n", encoding="utf-8")
    meta = json.loads((run / "meta.json").read_text(encoding="utf-8"))
    meta["phases_completed"] = [p for p in meta["phases_completed"] if p != "evaluation"]
    (run / "meta.json").write_text(json.dumps(meta), encoding="utf-8")

    data = plan_json("--config", "smoke.yaml", "--continue", "--estimate-samples", "0")
    assert data["remaining_only"] is True
    assert data["total_calls"] == 7
    assert data["phases"]["evaluation"]["calls"] == 7
    judge = json.loads(lines[0])["judge_model_id"]
    assert data["models"][judge]["calls"] == 7
    assert data["models"][judge]["sources"] == ["history"]
    # a plan writes nothing into the run folder without --out
    assert (run / "cost_estimate.json").read_bytes() == kept


def test_batch_discount_applies_to_batched_phases(work: Path) -> None:
    raw = yaml.safe_load((EXAMPLES / "code-review-batch.yaml").read_text(encoding="utf-8"))
    with_batch = estimate_cost(load_config(raw, check_filesystem=False), samples=0)
    raw["experiment"].pop("batch")
    without = estimate_cost(load_config(raw, check_filesystem=False), samples=0)
    config = load_config(raw, check_filesystem=False)
    for phase in ("response_collection", "evaluation"):
        for model in config.models:
            price = price_for(model)
            assert price is not None
            a = sum(c.cost_usd or 0 for c in with_batch.cells if c.phase == phase and c.model == model.name)
            b = sum(c.cost_usd or 0 for c in without.cells if c.phase == phase and c.model == model.name)
            assert a == pytest.approx(b * price.batch_discount)
    # phase 3 is not batched in that config: same cost either way
    assert (
        with_batch.by_phase()["data_generation"]["cost_usd"]
        == without.by_phase()["data_generation"]["cost_usd"]
    )


def test_unknown_price_and_missing_credentials_are_reported(work: Path) -> None:
    raw = yaml.safe_load((EXAMPLES / "first-run.yaml").read_text(encoding="utf-8"))
    raw["models"][0]["parameters"]["model"] = "model-nobody-sells-xyz"
    estimate = estimate_cost(load_config(raw, check_filesystem=False), samples=2)
    assert estimate.sample_calls == 0  # no key: no call attempted
    notes = " ".join(estimate.notes)
    assert "no credentials for openai" in notes
    assert "no price known" in notes
    assert estimate.total["cost_complete"] is False


def test_estimate_only_then_run(work: Path) -> None:
    shutil.copy(ROOT / "examples" / "mock_smoke.yaml", work / "smoke.yaml")
    result = CliRunner().invoke(
        cli, ["run", "--config", "smoke.yaml", "--estimate-only", "--estimate-samples", "1"]
    )
    assert result.exit_code == 0, result.output
    run = work / "runs" / "mock-smoke"
    assert sorted(p.name for p in run.iterdir()) == ["cost_estimate.json"]
    estimate = json.loads((run / "cost_estimate.json").read_text(encoding="utf-8"))
    assert estimate["total_calls"] == 70
    # the estimate alone does not make the folder an existing run
    assert CliRunner().invoke(cli, ["run", "--config", "smoke.yaml"]).exit_code == 0


def test_estimate_cost_in_config_prints_before_running(work: Path) -> None:
    raw = yaml.safe_load((ROOT / "examples" / "mock_smoke.yaml").read_text(encoding="utf-8"))
    raw["experiment"].update(estimate_cost=True, estimate_samples=0)
    (work / "c.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    result = CliRunner().invoke(cli, ["run", "--config", "c.yaml"])
    assert result.exit_code == 0, result.output
    assert "Cost estimate" in result.stdout
    assert (work / "runs" / "mock-smoke" / "meta.json").is_file()
