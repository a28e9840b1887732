"""The surveys' fast path (whole-file regular expressions over finished runs) must say
exactly what parsing every record says, whatever the run holds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from coeval.phases import evaluation as evaluation_module
from coeval.phases.base import RunView
from coeval.phases.evaluation import EvaluationPhase
from coeval.phases.responses import ResponseCollectionPhase
from coeval.plugins.config_loading import load_config
from coeval.plugins.manager import registries
from coeval.run.options import RunOptions
from coeval.run.runner import run_experiment
from coeval.storage.run_folder import RunFolder


def _config(tmp_path: Path, mode: str) -> Path:
    task = {
        "description": "Answer a question.",
        "target_attributes": {"topic": ["history", "science"]},
        "sampling": {"target": [1, 1], "nuance": [0, 0], "total": 3},
    }
    config = {
        "models": [
            {"name": f"mock-{c}", "interface": "mock", "parameters": {"seed": i}, "roles": ["teacher", "student", "judge"]}
            for i, c in enumerate("ab")
        ],
        "tasks": [
            {**task, "name": "plain", "rubric": {"correctness": "The answer is right.", "clarity": "It is clear."},
             "evaluation_mode": mode},
            {**task, "name": "labelled", "rubric": {"correctness": "Right.", "topic": "Topic matches."},
             "label_attributes": ["topic"]},
        ],
        "experiment": {"id": f"fast-{mode}", "storage_folder": str(tmp_path / "runs")},
    }
    path = tmp_path / f"{mode}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module", params=["single", "per_factor"])
def finished(request, tmp_path_factory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp(request.param)
    path = _config(tmp, request.param)
    result = run_experiment(load_config(path), RunOptions(progress=False))
    assert result.exit_code == 0, result.message
    return path, result.run_folder


def _surveys(config_path: Path, run: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], ...]:
    config = load_config(config_path, continue_run=True)
    view = RunView(config, RunFolder(run), registries())
    fast = EvaluationPhase().survey(view).to_dict(), ResponseCollectionPhase().survey(view).to_dict()
    with monkeypatch.context() as m:  # every file through the JSON parser
        for module in ("coeval.phases._evaluation_survey", "coeval.phases._evaluation_inputs"):
            m.setattr(f"{module}.match_every_line", lambda pattern, data: None)
        m.setattr("coeval.storage.records.match_every_line", lambda pattern, data: None)
        slow = EvaluationPhase().survey(view).to_dict(), ResponseCollectionPhase().survey(view).to_dict()
    return fast, slow


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


def _first(run: Path, phase_dir: str) -> Path:
    return sorted((run / phase_dir).glob("*.jsonl"))[0]


def _fail_one(path: Path) -> None:
    lines = _lines(path)
    rec = json.loads(lines[0])
    rec.update(status="failed", error_kind="rate_limit", scores={})
    path.write_text(json.dumps(rec) + "\n" + "".join(lines[1:]), encoding="utf-8")


def _drop_one(path: Path) -> None:
    path.write_text("".join(_lines(path)[1:]), encoding="utf-8")


def _duplicate_then_fail(path: Path) -> None:
    lines = _lines(path)
    rec = json.loads(lines[0])
    rec.update(status="failed", error_kind="transient")
    path.write_text("".join(lines) + json.dumps(rec) + "\n", encoding="utf-8")


def _drop_a_factor(path: Path) -> None:
    lines = _lines(path)
    rec = json.loads(lines[0])
    rec["scores"] = dict(list(rec["scores"].items())[:-1])
    path.write_text("".join([*lines, json.dumps(rec, ensure_ascii=False) + "\n"]), encoding="utf-8")


def _reorder_keys(path: Path) -> None:
    lines = _lines(path)
    rec = json.loads(lines[0])
    path.write_text("".join([*lines[1:], json.dumps(dict(reversed(list(rec.items())))) + "\n"]), encoding="utf-8")


def _brace_in_a_factor(path: Path) -> None:
    lines = _lines(path)
    rec = json.loads(lines[0])
    rec["scores"] = {"fit {x}": "High"}
    path.write_text("".join([*lines, json.dumps(rec) + "\n"]), encoding="utf-8")


def _cut_in_the_middle(path: Path) -> None:
    lines = _lines(path)
    lines[1] = lines[1].rstrip("\n")[:-1] + "\n"  # lost its closing brace
    path.write_text("".join(lines), encoding="utf-8")


def _cut_last(path: Path) -> None:
    data = path.read_bytes().rstrip(b"\n")
    path.write_bytes(data[: len(data) - 20])


DAMAGE = {
    "intact": None,
    "a failed evaluation": ("phase5_evaluations", _fail_one),
    "a missing evaluation": ("phase5_evaluations", _drop_one),
    "an ok evaluation superseded by a failed one": ("phase5_evaluations", _duplicate_then_fail),
    "a later record scoring fewer factors": ("phase5_evaluations", _drop_a_factor),
    "keys in another order": ("phase5_evaluations", _reorder_keys),
    "a cut last line": ("phase5_evaluations", _cut_last),
    "a brace in a factor name": ("phase5_evaluations", _brace_in_a_factor),
    "a line cut in the middle": ("phase5_evaluations", _cut_in_the_middle),
    "a response cut in the middle": ("phase4_responses", _cut_in_the_middle),
    "a failed response": ("phase4_responses", _fail_one),
    "a missing response": ("phase4_responses", _drop_one),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_fast_and_parsed_surveys_agree(damage: str, finished, tmp_path: Path, monkeypatch) -> None:
    config_path, run = finished
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    if DAMAGE[damage] is not None:
        phase_dir, change = DAMAGE[damage]
        change(_first(copy, phase_dir))
    fast, slow = _surveys(config_path, copy, monkeypatch)
    assert fast == slow
    if damage == "intact":
        assert fast[0]["complete"] and fast[0]["total"]["expected"] > 0
    elif damage != "keys in another order":
        assert not (fast[0]["complete"] and fast[1]["complete"])


def test_the_fast_path_is_taken_on_a_finished_run(finished, monkeypatch) -> None:
    config_path, run = finished
    state = evaluation_module._SurveyState(RunView(load_config(config_path, continue_run=True), RunFolder(run), registries()))
    assert state.ok_segments is not None and len(state.ok_segments) > 0
