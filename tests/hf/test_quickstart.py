"""The quick start: its config is valid, and a shrunken copy runs all five phases for real."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from coeval.plugins.config_loading import load_config

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart.yaml"
PHASE_FILES = {
    "phase1_attributes": "short_answer.target_attrs.json",
    "phase2_rubric": "short_answer.rubric.json",
}


def test_quickstart_config_is_valid_and_runs_only_the_embedded_model() -> None:
    config = load_config(QUICKSTART)  # its data file and check module beside it, as shipped
    assert config.experiment.id == "quickstart-v1" and config.experiment.storage_folder == "./runs"
    assert {m.interface for m in config.models} == {"llamacpp"}
    assert {m.parameters["model"] for m in config.models} == {"smollm2-135m"}
    temperatures = {m.parameters["temperature"] for m in config.models}
    assert len(temperatures) >= 2, "sampling settings must differ, or the ensemble is trivial"
    assert len(config.teachers) >= 2 and len(config.students) >= 2 and len(config.judges) >= 2
    # a second task settled by a deterministic check on the quick start's own data file
    capital = next(t for t in config.tasks if t.name == "capital_city")
    assert capital.rubric["names_the_capital"]["evaluator"] == "python"


def test_the_quickstart_check_finds_the_capital_in_an_answer() -> None:
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from quickstart_checks import names_the_capital  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(ROOT / "examples"))
    assert names_the_capital("The capital of Egypt is Cairo.", {"reference_response": "Cairo"}) is True
    assert names_the_capital("The capital city of France is", {"reference_response": "Paris"}) is False


def coeval(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coeval.cli.main", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=240)


@pytest.mark.slow
def test_a_small_copy_of_the_quickstart_runs_every_phase_on_the_real_model(tmp_path: Path) -> None:
    raw = yaml.safe_load(QUICKSTART.read_text())
    greedy, clipped = raw["models"][0], raw["models"][2]
    raw["models"] = [greedy, clipped]  # one teacher and judge, two students: 1 item, 2 answers, 2 grades
    raw["tasks"] = raw["tasks"][:1]  # the teacher-written task (the data-file task is checked below)
    raw["tasks"][0]["sampling"]["total"] = 1
    raw["experiment"]["id"] = "quickstart-small"
    (tmp_path / "small.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))

    done = coeval("run", "--config", "small.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    run = tmp_path / "runs" / "quickstart-small"
    for folder, name in PHASE_FILES.items():
        assert (run / folder / name).is_file()

    def records(folder: str) -> list[dict[str, object]]:
        return [json.loads(line) for f in sorted((run / folder).glob("*.jsonl")) for line in f.read_text().splitlines()]

    datapoints, responses, grades = records("phase3_datapoints"), records("phase4_responses"), \
        records("phase5_evaluations")
    assert len(datapoints) == 1 and len(responses) == 2 and len(grades) == 2
    assert all(r["status"] == "ok" for r in datapoints + responses + grades)
    assert datapoints[0]["prompt"] and datapoints[0]["reference_response"]
    assert all(str(r["response"]).strip() for r in responses)
    assert all(set(g["scores"]) == {"correctness", "concision"} for g in grades)  # type: ignore[arg-type]
    assert all(v in ("High", "Medium", "Low") for g in grades for v in g["scores"].values())  # type: ignore[attr-defined]
    # generation speed from llama.cpp's timings, as `coeval status` shows it
    calls = [r for r in datapoints + responses + grades if r["usage"]["output_tokens"] > 1]  # type: ignore[index]
    assert calls and all(r["tokens_per_s"] > 0 for r in calls)  # type: ignore[operator]

    status = coeval("status", "--run", str(run), cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert "completed" in status.stdout
