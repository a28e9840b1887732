"""An adaptive run (``experiment.adaptive``, ``coeval run --adaptive``) on the mock, end to end:
phase 5 in rounds, the judges that tell answers apart too little stopped after the
calibration slice, the rounds stopped once the first place is determined; the decisions kept
in meta.json, shown by ``coeval status`` and ``coeval analyze``, and taken again by
``--continue`` of a killed run, which buys no judgment twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from coeval.cli.main import cli

TOPICS = ["deltas", "floods", "dams", "tides", "rapids", "estuaries", "glaciers", "springs", "canals", "levees"]
STUDENTS = {"s-weak": 0.15, "s-mid": 0.45, "s-good": 0.7, "s-best": 0.95}
#: the reference run's shape: two discriminating judges of one family, three that are not
LOCAL_JUDGES = ["contrary", "flat", "middling"]


def _config(folder: Path, experiment_id: str, *, judge_latency_ms: int = 0, adaptive: bool = True,
            calibration: float | None = None) -> Path:
    judge_params: dict[str, Any] = {"latency_ms": judge_latency_ms} if judge_latency_ms else {}
    judges = [
        {"name": "sharp-a", "interface": "mock", "roles": ["judge"], "family": "sharp",
         "parameters": {"quality": 0.95, **judge_params}},
        {"name": "sharp-b", "interface": "mock", "roles": ["judge"], "family": "sharp",
         "parameters": {"quality": 0.9, "seed": 3, **judge_params}},
        {"name": "flat", "interface": "mock", "roles": ["judge"], "family": "local",
         "parameters": {"judge": {"flat": "High"}, **judge_params}},
        {"name": "contrary", "interface": "mock", "roles": ["judge"], "family": "local",
         "parameters": {"quality": 1.0, "judge": {"bias": {"s-best": -0.6, "s-good": -0.2, "s-mid": 0.2,
                                                            "s-weak": 0.6}}, **judge_params}},
        {"name": "middling", "interface": "mock", "roles": ["judge"], "family": "local",
         "parameters": {"judge": {"flat": "Medium"}, **judge_params}},
    ]
    students = [{"name": n, "interface": "mock", "roles": ["student"], "parameters": {"quality": q}}
                for n, q in STUDENTS.items()]
    experiment: dict[str, Any] = {"id": experiment_id, "storage_folder": str(folder / "runs"), "seed": 7}
    if adaptive:
        experiment["adaptive"] = {"stop_when": {"top": 1}}
        if calibration is not None:
            experiment["adaptive"]["calibration"] = calibration
    config = {
        "models": [{"name": "teacher", "interface": "mock", "roles": ["teacher"]}, *students, *judges],
        "tasks": [{"name": "qa", "description": "Answer a question about rivers.",
                   "target_attributes": {"topic": TOPICS, "audience": ["child", "student", "engineer", "farmer"]},
                   "rubric": {"correct": "The answer is right."}, "sampling": {"total": 40}}],
        "experiment": experiment,
    }
    path = folder / f"{experiment_id}.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _judgments(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for f in sorted(run.glob("phase5*/*.jsonl"))
            for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]


def _meta(run: Path) -> dict[str, Any]:
    return dict(json.loads((run / "meta.json").read_text(encoding="utf-8")))


def _analyze(run: Path) -> tuple[dict[str, Any], str]:
    result = CliRunner().invoke(cli, ["analyze", "--run", str(run), "--report", "summary"])
    assert result.exit_code == 0, result.output
    return json.loads((run / "analysis" / "summary.json").read_text(encoding="utf-8")), result.output


def _headline_order(summary: dict[str, Any]) -> list[str]:
    students = summary["students"]
    return sorted(students, key=lambda s: -float(students[s]["headline_score"]))


def _decisions(meta: dict[str, Any]) -> dict[str, Any]:
    record = meta["adaptive"]
    return {
        "screening": [(j["judge"], j["stopped"], round(j["agreement"], 9), round(j["bound"], 9))
                      for j in record["screening"]],
        "looks": [(x["look"], x["datapoints"], x["answered"], x["open_students"]) for x in record["looks"]],
        "stop_reason": record["stop_reason"],
        "made_calls": record["made_calls"],
        "planned_calls": record["planned_calls"],
    }


@pytest.mark.slow
def test_the_reference_shape_stops_its_three_local_judges_and_saves_forty_percent(tmp_path: Path) -> None:
    full_path = _config(tmp_path, "full", adaptive=False)
    adaptive_path = _config(tmp_path, "adaptive")
    full = CliRunner().invoke(cli, ["run", str(full_path), "-q"])
    assert full.exit_code == 0, full.output
    result = CliRunner().invoke(cli, ["run", str(adaptive_path)])
    assert result.exit_code == 0, result.output
    runs = tmp_path / "runs"
    full_calls = sum(1 for r in _judgments(runs / "full") if r.get("judge_model_id"))
    adaptive_calls = sum(1 for r in _judgments(runs / "adaptive") if r.get("judge_model_id"))
    assert full_calls == 40 * 4 * 5
    record = _meta(runs / "adaptive")["adaptive"]
    assert sorted(record["stopped_judges"]) == LOCAL_JUDGES
    assert record["planned_calls"] == full_calls
    assert record["made_calls"] == adaptive_calls
    assert record["saved_calls"] == full_calls - adaptive_calls
    assert adaptive_calls <= 0.6 * full_calls, (adaptive_calls, full_calls)
    # the stopped judges graded the calibration slice and nothing after it
    by_judge = Counter(r["judge_model_id"] for r in _judgments(runs / "adaptive"))
    slice_calls = len(json.loads((runs / "adaptive" / "adaptive_rounds.json").read_text())["rounds"][0]) * 4
    assert {by_judge[j] for j in LOCAL_JUDGES} == {slice_calls}
    # the run's end says what it decided
    assert "judge flat: stopped after the calibration slice" in result.output
    assert "phase-5 calls:" in result.output and "absent by design" in result.output
    # the same headline order as the full run, analysed alike
    full_summary, _ = _analyze(runs / "full")
    adaptive_summary, console = _analyze(runs / "adaptive")
    assert _headline_order(adaptive_summary) == _headline_order(full_summary) == list(reversed(STUDENTS))
    assert sorted(adaptive_summary["adaptive"]["stopped_judges"]) == LOCAL_JUDGES
    assert "absent by design, not missing" in console
    flat_console = " ".join(console.split())  # the warning wraps at the terminal's width
    for judge in LOCAL_JUDGES:
        assert f"{judge} (agreement" in flat_console
    assert "below the 0.25 a judge needs to tell answers apart" in flat_console
    assert "Adaptive design's ranking" in console
    assert adaptive_summary["adaptive"]["ranking"][0]["student"] == "s-best"


@pytest.mark.slow
def test_status_names_the_judges_left_out_and_why(tmp_path: Path) -> None:
    path = _config(tmp_path, "shown")
    assert CliRunner().invoke(cli, ["run", str(path), "-q"]).exit_code == 0
    result = CliRunner().invoke(cli, ["status", "--run", str(tmp_path / "runs" / "shown")])
    assert result.exit_code == 0, result.output
    for judge in LOCAL_JUDGES:
        assert f"judge {judge}: stopped after the calibration slice" in result.output
    assert "below the 0.25 a judge needs to tell answers apart" in result.output
    assert "status: completed" in result.output  # what the design left out is not missing
    status = json.loads(CliRunner().invoke(cli, ["status", "--run", str(tmp_path / "runs" / "shown"),
                                                 "--json"]).output)
    assert sorted(status["adaptive"]["stopped_judges"]) == LOCAL_JUDGES
    evaluation = next(p for p in status["phases"] if p["phase"] == "evaluation")
    assert evaluation["total"]["missing"] == 0
    assert evaluation["total"]["expected"] == evaluation["total"]["ok"] == status["adaptive"]["made_calls"]


def _coeval(*args: str, cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "coeval", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})


@pytest.mark.slow
def test_a_killed_adaptive_run_continued_buys_nothing_twice_and_decides_the_same(tmp_path: Path) -> None:
    # a slice of 8 datapoints leaves the first place open: the rounds go on after it
    whole_path = _config(tmp_path, "whole", judge_latency_ms=150, calibration=0.2)
    killed_path = _config(tmp_path, "killed", judge_latency_ms=150, calibration=0.2)
    assert CliRunner().invoke(cli, ["run", str(whole_path), "-q"]).exit_code == 0
    run = tmp_path / "runs" / "killed"
    proc = _coeval("run", str(killed_path), "-q", cwd=tmp_path)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:  # kill it in phase 5, after the slice's look, mid round
            if (run / "meta.json").exists() and (_meta(run).get("adaptive") or {}).get("looks"):
                break
            time.sleep(0.02)
        else:
            pytest.fail("the run never reached its first look")
        time.sleep(0.1)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    killed_meta = _meta(run)
    assert not killed_meta["adaptive"].get("finished"), "killed after it had finished: kill earlier"
    result = CliRunner().invoke(cli, ["run", str(killed_path), "--continue", "-q"])
    assert result.exit_code == 0, result.output
    ids = [r["id"] for r in _judgments(run)]
    assert len(ids) == len(set(ids)), [i for i, n in Counter(ids).items() if n > 1]
    assert _decisions(_meta(run)) == _decisions(_meta(tmp_path / "runs" / "whole"))
    assert len(ids) == len(_judgments(tmp_path / "runs" / "whole"))


@pytest.mark.slow
def test_the_adaptive_flag_turns_the_design_on_with_its_defaults_and_continue_keeps_it(tmp_path: Path) -> None:
    path = _config(tmp_path, "flag", adaptive=False)
    result = CliRunner().invoke(cli, ["run", str(path), "--adaptive", "-q", "--json"])
    assert result.exit_code == 0, result.output
    run = tmp_path / "runs" / "flag"
    record = _meta(run)["adaptive"]
    summary, _ = json.JSONDecoder().raw_decode(result.stdout[result.stdout.index("{"):])  # coeval run --json
    assert summary["adaptive"] == record
    assert record["settings"] == {"screen": True, "calibration": 0.3, "stop_when": {"top": 1}, "looks": 6,
                                  "alpha": 0.05}
    assert sorted(record["stopped_judges"]) == LOCAL_JUDGES
    before = len(_judgments(run))
    again = CliRunner().invoke(cli, ["run", str(path), "--continue", "-q"])  # the config itself is not adaptive
    assert again.exit_code == 0, again.output
    assert len(_judgments(run)) == before  # the finished design is complete: nothing more is bought
    assert _meta(run)["status"] == "completed"


def test_adaptive_refuses_only_models_shards(tmp_path: Path) -> None:
    path = _config(tmp_path, "shards")
    result = CliRunner().invoke(cli, ["run", str(path), "--only-models", "sharp-a"])
    assert result.exit_code == 2, result.output
    assert "adaptive evaluation decides each round from every judge's judgments" in result.output
    assert "Traceback" not in result.output


@pytest.mark.slow
def test_a_quota_stops_the_rounds_unfinished_and_continue_takes_them_up(tmp_path: Path) -> None:
    path = _config(tmp_path, "capped")
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    raw["experiment"]["quota"] = {"sharp-a": {"max_calls": 20}}  # fewer than the slice's 32 answers
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    result = CliRunner().invoke(cli, ["run", str(path), "-q"])
    assert result.exit_code == 3, result.output
    run = tmp_path / "runs" / "capped"
    record = _meta(run)["adaptive"]
    assert record["finished"] is False and record["looks"] == []
    assert record["stop_reason"].startswith("stopped before the question was answered (quota)")
    del raw["experiment"]["quota"]
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    again = CliRunner().invoke(cli, ["run", str(path), "--continue", "-q"])
    assert again.exit_code == 0, again.output
    record = _meta(run)["adaptive"]
    assert record["finished"] is True and sorted(record["stopped_judges"]) == LOCAL_JUDGES
    ids = [r["id"] for r in _judgments(run)]
    assert len(ids) == len(set(ids)) == record["made_calls"]
