"""``tasks[].data``: a config names its own datapoints; ``coeval run`` answers and judges them
with no teacher, honours ``--limit`` and ``--continue``, refuses a changed file as drift, and
reports column typos and bad rows as validation errors (V-61, exit code 2)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner
from coeval.cli.main import cli

ROWS = [
    {"ticket": f"t{i}", "question": q, "answer": a, "intent": intent}
    for i, (q, a, intent) in enumerate([
        ("Where is my parcel?", "It ships tomorrow.", "shipping"),
        ("Can I get my money back?", "Yes, within 30 days.", "refund"),
        ("How do I reset my password?", "Use the reset link.", "account"),
        ("Is the parcel insured?", "Yes, up to 100 EUR.", "shipping"),
        ("I was charged twice.", "We refund the second charge.", "refund"),
    ], 1)
]


def _write_csv(path: Path, rows: list[dict[str, str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _config(folder: Path, data: dict[str, Any], **task: Any) -> Path:
    raw = {
        "models": [
            {"name": "student-a", "interface": "mock", "roles": ["student"]},
            {"name": "student-b", "interface": "mock", "roles": ["student"]},
            {"name": "judge", "interface": "mock", "roles": ["judge"]},
        ],
        "tasks": [{
            "name": "support",
            "description": "Answer the customer's question.",
            "data": data,
            "rubric": {"helpful": "The answer solves the problem.",
                       "short": {"evaluator": "max_words", "params": {"limit": 60}}},
            **task,
        }],
        "experiment": {"id": "own-data", "storage_folder": "runs", "probe_mode": "disable"},
    }
    path = folder / "support.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


def _records(phase: str) -> list[dict[str, Any]]:
    run = Path("runs") / "own-data" / phase  # storage_folder is relative to the current directory
    return [json.loads(line) for p in sorted(run.glob("*.jsonl")) for line in p.read_text().splitlines()]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A config and its CSV in ``tmp_path/project``, run from another directory: the file is
    found relative to the config, not to the current directory."""
    folder = tmp_path / "project"
    folder.mkdir()
    _write_csv(folder / "support.csv", ROWS)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return folder


def _run(*args: str) -> Any:
    return CliRunner().invoke(cli, ["run", *args])


def test_a_csv_task_runs_end_to_end_without_a_teacher(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = _config(project, {"file": "support.csv", "prompt": "question", "reference": "answer",
                               "labels": ["intent"], "id": "ticket"})
    monkeypatch.chdir(project)
    plan = CliRunner().invoke(cli, ["plan", str(config)])
    assert plan.exit_code == 0, plan.output
    result = _run(str(config))
    assert result.exit_code == 0, result.output
    datapoints = _records("phase3_datapoints")
    assert [d["id"] for d in datapoints] == [f"support__support-data__t{i}" for i in range(1, 6)]
    assert datapoints[1]["prompt"] == "Can I get my money back?"
    assert datapoints[1]["reference_response"] == "Yes, within 30 days."
    assert datapoints[1]["sampled_target_attributes"] == {"intent": "refund"}
    assert len(_records("phase4_responses")) == 10  # 5 rows x 2 students
    evaluations = _records("phase5_evaluations")
    by_scorer = {e["judge_model_id"] for e in evaluations}
    assert {"judge", "label", "max_words"} <= by_scorer
    assert sum(e["judge_model_id"] == "judge" for e in evaluations) == 10
    assert sum(e["judge_model_id"] == "label" for e in evaluations) == 10  # intent scored by exact match


def test_limit_gives_that_many_datapoints_and_continue_adds_the_rest(project: Path) -> None:
    config = _config(project, {"file": "support.csv", "prompt": "question", "reference": "answer"})
    first = _run(str(config), "--limit", "3")
    assert first.exit_code == 0, first.output
    assert len(_records("phase3_datapoints")) == 3
    assert len(_records("phase4_responses")) == 6
    again = _run(str(config), "--continue")
    assert again.exit_code == 0, again.output
    ids = [d["id"] for d in _records("phase3_datapoints")]
    assert len(ids) == 5 and len(set(ids)) == 5
    responses = [r["id"] for r in _records("phase4_responses")]
    assert len(responses) == 10 and len(set(responses)) == 10


def test_an_edited_row_of_the_data_file_is_refused_as_drift(project: Path) -> None:
    config = _config(project, {"file": "support.csv", "prompt": "question"})
    assert _run(str(config), "--limit", "2").exit_code == 0
    held = [d["prompt"] for d in _records("phase3_datapoints")]
    changed = [dict(r) for r in ROWS]
    row = next(i for i, r in enumerate(changed) if r["question"] == held[0])
    changed[row]["question"] += " Please answer today."
    _write_csv(project / "support.csv", changed)
    result = _run(str(config), "--continue")
    assert result.exit_code == 2, result.output
    assert f"task support: data: 1 row edited: row {row + 1} {held[0]!r} -> " in " ".join(result.output.split())
    assert len(_records("phase3_datapoints")) == 2  # nothing was added


def test_a_column_typo_gets_a_did_you_mean_with_the_files_columns(project: Path) -> None:
    config = _config(project, {"file": "support.csv", "prompt": "questoin", "labels": ["intnet"]})
    result = CliRunner().invoke(cli, ["plan", str(config)])
    assert result.exit_code == 2, result.output
    out = " ".join(result.output.split())
    assert "V-61" in out and "tasks[0].data.prompt" in out
    assert "column 'questoin' (data.prompt) is not in" in out and "support.csv" in out
    assert "(did you mean 'question'?); its columns: ticket, question, answer, intent" in out


def test_a_bad_row_names_file_and_row(project: Path) -> None:
    rows = [dict(r) for r in ROWS]
    rows[3]["question"] = ""
    _write_csv(project / "support.csv", rows)
    config = _config(project, {"file": "support.csv", "prompt": "question"})
    result = CliRunner().invoke(cli, ["plan", str(config)])
    assert result.exit_code == 2, result.output
    out = " ".join(result.output.split())
    assert "V-61" in out and "support.csv row 5: field 'question' (data.prompt) is missing or empty" in out


def test_missing_file_and_a_rubric_nobody_can_write(project: Path) -> None:
    config = _config(project, {"file": "nope.jsonl", "prompt": "question"}, rubric="auto")
    result = CliRunner().invoke(cli, ["plan", str(config)])
    assert result.exit_code == 2
    out = " ".join(result.output.split())
    assert "nope.jsonl does not exist" in out
    assert "rubric: auto is written by teachers in phase 2, and no model is a teacher" in out


def test_jsonl_and_parquet_read_alike(project: Path) -> None:
    (project / "support.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    pq.write_table(pa.Table.from_pylist(ROWS), project / "support.parquet")
    for name in ("support.jsonl", "support.parquet"):
        config = _config(project, {"file": name, "prompt": "question", "id": "ticket"})
        result = CliRunner().invoke(cli, ["plan", str(config)])
        assert result.exit_code == 0, result.output


@pytest.mark.slow
def test_a_data_task_with_checker_python_tests_runs_the_answers(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [
        {"q": "Write add(a, b).", "tests": "def check(f):\n    assert f(2, 3) == 5\n", "entry": "add"},
        {"q": "Write neg(x).", "tests": "def check(f):\n    assert f(4) == -4\n", "entry": "neg"},
    ]
    (project / "code.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    good = {"add(a, b)": "```python\ndef add(a, b):\n    return a + b\n```",
            "neg(x)": "```python\ndef neg(x):\n    return -x\n```"}
    raw = {
        "models": [
            {"name": "good", "interface": "mock", "roles": ["student"], "parameters": {"replies": good}},
            {"name": "bad", "interface": "mock", "roles": ["student"],
             "parameters": {"replies": {"": "```python\ndef add(a, b):\n    return a - b\n```"}}},
        ],
        "tasks": [{"name": "code", "description": "Write the function.", "checker": "python_tests",
                   "data": {"file": "code.jsonl", "prompt": "q", "tests": "tests", "entry_point": "entry"},
                   "rubric": {"runs": {"evaluator": "json_valid"}}}],
        "experiment": {"id": "own-data", "storage_folder": "runs", "probe_mode": "disable"},
    }
    config = project / "code.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    result = _run(str(config), "--allow-unsandboxed-code")
    assert result.exit_code == 0, result.output
    runs = {(e["student_model_id"], e["datapoint_id"]): e for e in _records("phase5_evaluations")
            if e["judge_model_id"] == "python_tests"}
    assert {k: v["scores"] for k, v in runs.items()} == {
        ("good", "code__code-data__row000001"): {"pass@1": 1.0},
        ("good", "code__code-data__row000002"): {"pass@1": 1.0},
        ("bad", "code__code-data__row000001"): {"pass@1": 0.0},
        ("bad", "code__code-data__row000002"): {"pass@1": 0.0},
    }
    failed = runs[("bad", "code__code-data__row000001")]["execution"]
    assert failed["status"] == "failed" and failed["error"].endswith("AssertionError")
    assert "NameError: name 'neg' is not defined" in runs[("bad", "code__code-data__row000002")]["execution"]["error"]


def test_checker_without_tests_is_a_warning_and_the_run_flag_is_documented(project: Path) -> None:
    config = _config(project, {"file": "support.csv", "prompt": "question"}, checker="python_tests")
    result = CliRunner().invoke(cli, ["plan", str(config)])
    assert result.exit_code == 0, result.output
    assert "V-62" in result.output and "no data.tests column" in " ".join(result.output.split())
    help_text = CliRunner().invoke(cli, ["run", "--help"]).output
    assert "--allow-unsandboxed-code" in help_text
