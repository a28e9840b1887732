"""Ingest into a finished mock run, then `coeval run --continue`: phases 4-5 run for the
benchmark teachers only, gold records score the students, and nothing repeats."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval.storage import RunFolder
from coeval_benchmarks.adapters.gsm8k import GSM8K
from coeval_benchmarks.adapters.sciq import SciQ
from coeval_benchmarks.ingest import load_items

from tests.benchmarks.conftest import FIXTURES, snapshot

WRONG_LETTER = {"A": "B", "B": "C", "C": "D", "D": "A"}


def scripted_students() -> tuple[dict[str, str], dict[str, str]]:
    """Replies keyed by question text: a student that answers right (in chatty forms) and one
    that answers wrong. Judges are separate models, so judge prompts never hit these."""
    good: dict[str, str] = {}
    weak: dict[str, str] = {}
    right_forms = ["Step by step: 3 * 4 = 12, 12 - 5 = 7.\n#### {}", "So the total is ${}.", "the result is {}0"]
    for form, item in zip(right_forms, load_items(GSM8K(), "test", FIXTURES)[0], strict=True):
        key = item.prompt.rsplit("\n", 1)[-1][:40]
        good[key] = form.format(item.label)  # "#### 7", "$1,250.", "12.50"
        weak[key] = "#### 3"
    for item in load_items(SciQ(), "test", FIXTURES)[0]:
        key = item.prompt.split("Question: ", 1)[1][:30]
        good[key] = f"The answer is {item.label}."
        weak[key] = f"({WRONG_LETTER[item.label]})"
    return good, weak


def write_config(tmp_path: Path) -> Path:
    good, weak = scripted_students()
    config: dict[str, Any] = {
        "models": [
            {"name": "author", "interface": "mock", "parameters": {"seed": 1}, "roles": ["teacher", "judge"]},
            {"name": "critic", "interface": "mock", "parameters": {"seed": 2}, "roles": ["judge"]},
            {"name": "good-student", "interface": "mock", "parameters": {"replies": good}, "roles": ["student"]},
            {"name": "weak-student", "interface": "mock", "parameters": {"replies": weak}, "roles": ["student"]},
        ],
        "tasks": [{
            "name": "short_answer",
            "description": "Answer a general-knowledge question in one sentence.",
            "output_description": "One sentence.",
            "target_attributes": {"topic": ["history", "science"]},
            "sampling": {"target": [1, 1], "nuance": [0, 0], "total": 2},
            "rubric": {"correctness": "The answer is right."},
        }],
        "experiment": {"id": "bench-mix", "storage_folder": str(tmp_path / "runs")},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def coeval(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result


def records(run: RunFolder, phase: str) -> list[dict[str, Any]]:
    return list(run.iter_records(phase))


@pytest.fixture
def mixed_run(tmp_path: Path) -> tuple[Path, RunFolder]:
    config = write_config(tmp_path)
    coeval("run", "--config", str(config))
    return config, RunFolder(tmp_path / "runs" / "bench-mix")


def test_ingest_then_continue_runs_phases_4_and_5_for_the_benchmark_teachers_only(
    mixed_run: tuple[Path, RunFolder],
) -> None:
    config, run = mixed_run
    assert run.read_meta()["status"] == "completed"
    before = snapshot(run.root)
    coeval("ingest", "--run", str(run.root), "-b", "gsm8k", "sciq", "--data-dir", str(FIXTURES))
    coeval("run", "--config", str(config), "--continue")
    after = snapshot(run.root)

    # The run's own responses and evaluations are untouched; only new files appeared.
    for name, content in before.items():
        if name.startswith(("phase4_responses/", "phase5_evaluations/", "phase3_datapoints/")):
            assert after[name] == content, name
    new_files = sorted(set(after) - set(before))
    assert all("gsm8k" in f or "sciq" in f for f in new_files if f.startswith(("phase4", "phase5"))), new_files

    responses = [r for r in records(run, "response_collection") if r["teacher_model_id"].endswith("-benchmark")]
    assert len(responses) == (3 + 2) * 2  # items x students
    assert {r["status"] for r in responses} == {"ok"}

    bench_evals = [e for e in records(run, "evaluation") if e["teacher_model_id"].endswith("-benchmark")]
    judges = {e["judge_model_id"] for e in bench_evals if e.get("evaluator", "llm_judge") == "llm_judge"}
    assert judges == {"author", "critic"}

    gold = {(e["datapoint_id"], e["student_model_id"]): e["scores"]["gold"]
            for e in bench_evals if e["judge_model_id"] == "gold"}
    assert len(gold) == 10
    assert all(e["evaluator"] == "gold" for e in bench_evals if e["judge_model_id"] == "gold")
    assert {v for (_, s), v in gold.items() if s == "good-student"} == {1.0}
    assert {v for (_, s), v in gold.items() if s == "weak-student"} == {0.0}
    assert run.read_meta()["status"] == "completed"


def test_second_ingest_and_second_continue_write_nothing_new(mixed_run: tuple[Path, RunFolder]) -> None:
    config, run = mixed_run
    coeval("ingest", "--run", str(run.root), "-b", "sciq", "--data-dir", str(FIXTURES))
    coeval("run", "--config", str(config), "--continue")
    data_before = {k: v for k, v in snapshot(run.root).items() if k.startswith("phase")}
    meta_before = (run.root / "meta.json").read_bytes()

    again = coeval("ingest", "--run", str(run.root), "-b", "sciq", "--data-dir", str(FIXTURES))
    assert "nothing new" in again.output
    assert (run.root / "meta.json").read_bytes() == meta_before
    coeval("run", "--config", str(config), "--continue")
    assert {k: v for k, v in snapshot(run.root).items() if k.startswith("phase")} == data_before
    log = json.loads((run.root / "meta.json").read_text())["ingest_log"]
    assert [e["benchmark"] for e in log] == ["sciq"]


@pytest.mark.slow
def test_analyze_reports_gold_scores_beside_judge_scores_and_their_correlation(
    mixed_run: tuple[Path, RunFolder], tmp_path: Path
) -> None:
    import coeval_analysis  # noqa: F401  (the analyze command comes from it)
    config, run = mixed_run
    coeval("ingest", "--run", str(run.root), "-b", "gsm8k,sciq", "--data-dir", str(FIXTURES))
    coeval("run", "--config", str(config), "--continue")
    out = tmp_path / "analysis"
    coeval("analyze", "--run", str(run.root), "--out", str(out), "--bootstrap", "20", "-q")

    gold = json.loads((out / "summary.json").read_text())["gold"]
    students = gold["students"]
    assert students["good-student"]["gold_score"] == pytest.approx(1.0)
    assert students["weak-student"]["gold_score"] == pytest.approx(0.0)
    assert students["good-student"]["n"] == students["weak-student"]["n"] == 5
    assert "robust_score" in students["good-student"]  # the judge score beside it
    ensemble = gold["ensemble_vs_gold"]
    assert ensemble["n"] == 10 and -1.0 <= ensemble["pearson"] <= 1.0
    assert set(gold["judges_vs_gold"]) == {"author", "critic"}
    html = (out / "report.html").read_text()
    assert "gold score" in html and "ensemble vs gold" in html
