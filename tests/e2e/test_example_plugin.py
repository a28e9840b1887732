"""The example third-party plugin (examples/plugins/coeval-example), installed with pip and
used end to end on the mock interface: its metric, interface, evaluator and phase."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

#: pip installs the example plugin, then runs the CLI in subprocesses
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "plugins" / "coeval-example"
RESPONSES = 6  # 3 datapoints (one mock teacher) x 2 students (mock-a, parrot on echo)
VERDICT_SCORES = {"A": "High", "tie": "Medium", "B": "Low"}

CONFIG: dict[str, Any] = {
    "models": [
        {"name": "mock-a", "interface": "mock", "parameters": {"seed": 1}, "roles": ["teacher", "student", "judge"]},
        {"name": "parrot", "interface": "echo", "roles": ["student"]},
    ],
    "tasks": [{
        "name": "short_answer",
        "description": "Answer a general-knowledge question in one sentence.",
        "output_description": "One correct, complete sentence.",
        "target_attributes": {"topic": ["history", "science"]},
        "nuanced_attributes": {"phrasing": ["direct", "indirect"]},
        "sampling": {"target": [1, 1], "nuance": [1, 1], "total": 3},
        "rubric": {
            "correctness": "The answer is factually right.",
            "brevity": {"description": "About as long as the reference.", "metric": "length_ratio"},
            "preference": {"description": "A reader would rather get this answer.", "evaluator": "pairwise"},
        },
    }],
    "experiment": {"id": "example", "storage_folder": "runs"},
}


@pytest.fixture(scope="session")
def example_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The example installed with pip into a folder of its own, first on PYTHONPATH."""
    root = tmp_path_factory.mktemp("example-plugin")
    source, site = root / "source", root / "site"
    shutil.copytree(EXAMPLE, source)  # the build writes beside the sources: keep the checkout clean
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         "--target", str(site), str(source)],
        check=True, capture_output=True, text=True, timeout=600,
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)}
    env.pop("COEVAL_DISABLE_PLUGINS", None)
    return env


def _coeval(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coeval.cli.main", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def _records(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for path in sorted(folder.glob("*.jsonl")) for line in path.read_text().splitlines()]


def _write_config(where: Path, **experiment: Any) -> Path:
    config = json.loads(json.dumps(CONFIG))
    config["experiment"].update(experiment)
    path = where / "exp.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@pytest.fixture(scope="session")
def example_run(example_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("example-run")
    _write_config(where)
    done = _coeval(example_env, where, "run", "--config", "exp.yaml")
    assert done.returncode == 0, done.stderr
    return where / "runs" / "example"


def test_plugins_json_lists_the_contributions(example_env: dict[str, str], tmp_path: Path) -> None:
    done = _coeval(example_env, tmp_path, "plugins", "--json")
    assert done.returncode == 0, done.stderr
    entry = next(p for p in json.loads(done.stdout) if p["name"] == "example")
    assert entry["distribution"] == "coeval-example 0.1.0"
    assert (entry["metrics"], entry["interfaces"], entry["evaluators"], entry["phases"], entry["batch_runners"]) == (
        ["length_ratio"], ["echo"], ["pairwise"], ["answer_lengths"], ["echo"])


def test_a_config_batches_the_plugins_interface_through_its_batch_runner(
    example_env: dict[str, str], tmp_path: Path
) -> None:
    """``experiment.batch.echo`` is accepted because the plugin registered a batch runner for
    echo (no core list of batchable interfaces), the plan shows it, and the run sends
    parrot's answers through that runner's jobs: one job, every answer the prompt."""
    jobs = tmp_path / "echo-jobs"
    env = {**example_env, "COEVAL_EXAMPLE_BATCH_DIR": str(jobs)}
    _write_config(tmp_path, batch={"echo": {"response_collection": True}})
    plan = _coeval(env, tmp_path, "plan", "--config", "exp.yaml", "--json")
    assert plan.returncode == 0, plan.stderr
    batch = {name: m["batch_phases"] for name, m in json.loads(plan.stdout)["models"].items()}
    assert batch == {"mock-a": [], "parrot": ["response_collection"]}
    done = _coeval(env, tmp_path, "run", "--config", "exp.yaml")
    assert done.returncode == 0, done.stderr
    submitted = [json.loads(path.read_text()) for path in jobs.glob("echo-batch-*.json")]
    assert len(submitted) == 1 and len(submitted[0]) == 3
    parrot = [r for r in _records(tmp_path / "runs" / "example" / "phase4_responses")
              if r["student_model_id"] == "parrot"]
    assert sorted(r["request"]["prompt"] for r in parrot) == sorted(submitted[0].values())
    assert all(r["status"] == "ok" and r["response"] == r["request"]["prompt"].strip() for r in parrot)


def test_echo_interface_answered_with_the_prompt(example_run: Path) -> None:
    parrot = [r for r in _records(example_run / "phase4_responses") if r["student_model_id"] == "parrot"]
    assert len(parrot) == 3
    assert all(r["status"] == "ok" and r["response"] == r["request"]["prompt"].strip() for r in parrot)


def test_metric_scores_every_response_against_the_reference(example_run: Path) -> None:
    datapoints = {r["id"]: r for r in _records(example_run / "phase3_datapoints")}
    responses = {r["id"]: r for r in _records(example_run / "phase4_responses")}
    metric = [r for r in _records(example_run / "phase5_evaluations") if r["evaluator"] == "metric"]
    assert len(metric) == RESPONSES
    for rec in metric:
        answer = len(responses[rec["response_id"]]["response"].strip())
        reference = len(datapoints[rec["datapoint_id"]]["reference_response"].strip())
        assert rec["scores"] == {"brevity": round(min(answer, reference) / max(answer, reference), 6)}
        assert rec["metrics"] == {"brevity": "length_ratio"}


def test_pairwise_evaluator_wrote_one_record_per_response_through_the_scheduler(example_run: Path) -> None:
    evaluations = _records(example_run / "phase5_evaluations")
    pairwise = [r for r in evaluations if r["evaluator"] == "pairwise"]
    responses = [r["id"] for r in _records(example_run / "phase4_responses")]
    assert sorted(r["id"] for r in pairwise) == sorted(f"{rid}__mock-a__preference" for rid in responses)
    for rec in pairwise:
        assert rec["status"] == "ok" and rec["attempts"] == 1 and rec["judge_model_id"] == "mock-a"
        assert rec["scores"] == {"preference": VERDICT_SCORES[rec["winner"]]}
    # the LLM judge no longer scores the factor routed to pairwise, nor the metric one
    judged = [r for r in evaluations if r["evaluator"] == "llm_judge"]
    assert len(judged) == RESPONSES and all(set(r["scores"]) == {"correctness"} for r in judged)


def test_meta_json_counts_the_pairwise_calls(example_run: Path) -> None:
    meta = json.loads((example_run / "meta.json").read_text())
    caller = {"phase3_datapoints": "teacher_model_id", "phase4_responses": "student_model_id",
              "phase5_evaluations": "judge_model_id"}
    attempts = Counter()
    for phase, field in caller.items():
        for rec in _records(example_run / phase):
            attempts[(rec[field], rec.get("evaluator"))] += rec["attempts"]
    # 3 datapoints + 3 answers + 6 judge calls + 6 pairwise calls, one attempt each
    assert attempts[("mock-a", "pairwise")] == RESPONSES
    assert meta["calls"] == {"mock-a": 18, "parrot": 3}
    assert sum(n for (model, _), n in attempts.items() if model == "mock-a") == 18


def test_answer_lengths_phase_ran_after_the_responses(example_run: Path) -> None:
    meta = json.loads((example_run / "meta.json").read_text())
    assert "answer_lengths" in meta["phases_completed"]
    summary = json.loads((example_run / "answer_lengths.json").read_text())
    responses = _records(example_run / "phase4_responses")
    for student in ("mock-a", "parrot"):
        texts = [r["response"] for r in responses if r["student_model_id"] == student]
        assert summary[student]["answers"] == 3
        assert summary[student]["mean_chars"] == round(sum(len(t) for t in texts) / 3, 2)


def test_quota_stops_pairwise_calls_and_continue_makes_them(example_env: dict[str, str], tmp_path: Path) -> None:
    """mock-a's quota of 12 covers its datapoints, answers and judge calls, not the 6
    pairwise calls: they are left for --continue, which makes exactly those."""
    _write_config(tmp_path, quota={"mock-a": {"max_calls": 12}})
    stopped = _coeval(example_env, tmp_path, "run", "--config", "exp.yaml")
    run = tmp_path / "runs" / "example"
    assert stopped.returncode == 3, stopped.stderr
    assert json.loads((run / "meta.json").read_text())["calls"]["mock-a"] == 12
    assert not [r for r in _records(run / "phase5_evaluations") if r["evaluator"] == "pairwise"]
    _write_config(tmp_path, quota={"mock-a": {"max_calls": 18}})
    resumed = _coeval(example_env, tmp_path, "run", "--config", "exp.yaml", "--continue")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads((run / "meta.json").read_text())["calls"]["mock-a"] == 18
    assert len([r for r in _records(run / "phase5_evaluations") if r["evaluator"] == "pairwise"]) == RESPONSES


def test_plan_counts_the_pairwise_calls_and_lists_the_phase(example_env: dict[str, str], tmp_path: Path) -> None:
    """`coeval plan` before any run: the phase appears (no calls: it reads answers from disk),
    and the judge's phase-5 count includes the pairwise calls the run then makes (meta: 18)."""
    _write_config(tmp_path)
    done = _coeval(example_env, tmp_path, "plan", "--config", "exp.yaml", "--json")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    phases = {name: p["calls"] for name, p in plan["phases"].items()}
    assert list(phases) == ["attribute_mapping", "rubric_mapping", "data_generation", "response_collection",
                            "answer_lengths", "evaluation"]
    assert phases["answer_lengths"] == 0
    assert phases["evaluation"] == 2 * RESPONSES  # 6 judge calls + 6 pairwise calls
    assert {name: m["calls"] for name, m in plan["models"].items()} == {"mock-a": 18, "parrot": 3}
    # echo needs no model id and has no price: the note names the interface alone
    assert "parrot: no price known for echo; its cost is left out of the total" in plan["notes"]
    table = _coeval(example_env, tmp_path, "plan", "--config", "exp.yaml")
    assert table.returncode == 0 and "answer_lengths" in table.stdout


def test_answer_lengths_phase_shows_in_status(example_env: dict[str, str], example_run: Path) -> None:
    status = _coeval(example_env, example_run.parent.parent, "status", "--run", str(example_run), "--json")
    assert status.returncode == 0, status.stderr
    assert "answer_lengths" in status.stdout
