"""A reply or a line nested thousands of levels deep is one bad item, never a crash: a
judge's reply fails its own record while the phase completes, and a run-folder or ingest
line is a bad line (skipped and counted) or a row error naming the line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from coeval.prompts.errors import OutputParseError
from coeval.prompts.judging import parse_per_factor, parse_rationale, parse_single
from coeval.storage import iter_jsonl
from coeval_benchmarks.sources import DatasetFileError, read_rows

from tests.robustness._support import invoke, no_traceback

DEEP = "[" * 5000 + "]" * 5000
DEEP_OBJECT = '{"a":' * 5000 + "1" + "}" * 5000

CONFIG = {
    "models": [
        {"name": "stu", "interface": "mock", "parameters": {"seed": 1}, "roles": ["teacher", "student"]},
        {"name": "deep-judge", "interface": "mock", "roles": ["judge"],
         "parameters": {"seed": 2, "replies": ['{"rationale": ' + DEEP + ', "scores": ' + DEEP_OBJECT + "}"]}},
    ],
    "tasks": [{
        "name": "qa",
        "description": "Answer a general-knowledge question in one sentence.",
        "output_description": "One correct, complete sentence.",
        "target_attributes": {"topic": ["history", "science"]},
        "sampling": {"target": [1, 1], "nuance": [0, 0], "total": 3},
        "rubric": {"correctness": "The answer is factually right.", "clarity": "The answer is clear."},
        "evaluation_mode": "single",
    }],
    "experiment": {"id": "deep", "storage_folder": "runs", "generation_retries": 0, "probe_mode": "disable"},
}


def test_a_5000_level_reply_fails_one_record_and_the_phase_completes(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(CONFIG), encoding="utf-8")
    result = invoke(["run", "--config", "exp.yaml"])
    no_traceback(result)
    run = tmp_path / "runs" / "deep"
    records = [r for p in (run / "phase5_evaluations").glob("*.jsonl") for r in iter_jsonl(p)]
    assert len(records) == 3
    assert sorted(r["status"] for r in records) == ["failed", "ok", "ok"], result.output
    failed = next(r for r in records if r["status"] == "failed")
    assert "nested too deep" in failed["error"]
    meta = json.loads((run / "meta.json").read_text(encoding="utf-8"))
    phase = [e for e in meta["phase_log"] if e["phase"] == "evaluation"][-1]
    # the phase ran to its end: every item written or failed, none cancelled
    assert (phase["status"], phase["written"], phase["failed"], phase["skipped"]) == ("partial", 2, 1, 0)
    assert result.exit_code == 1, result.output  # a failed record is exit code 1, not a crash
    again = invoke(["run", "--config", "exp.yaml", "--continue"])
    no_traceback(again)
    assert again.exit_code in (0, 1), again.output


def test_judge_reply_parsers_raise_parse_errors_on_deep_replies() -> None:
    for reply in (DEEP, DEEP_OBJECT, "Here: " + DEEP_OBJECT, "```json\n" + DEEP + "\n```"):
        with pytest.raises(OutputParseError):
            parse_single(reply, ["correctness"])
        with pytest.raises(OutputParseError):
            parse_per_factor(reply, "correctness")
        assert parse_rationale(reply, ["correctness"]) == {}


def test_a_deep_run_folder_line_is_a_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps({"id": "a"}) + "\n" + DEEP_OBJECT + "\n" + DEEP + "\n" + json.dumps({"id": "b"}) + "\n",
                    encoding="utf-8")
    bad: list[int] = []
    assert [r["id"] for r in iter_jsonl(path, on_bad_line=lambda n, _t: bad.append(n))] == ["a", "b"]
    assert bad == [2, 3]


def test_a_deep_ingest_line_is_a_row_error(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text('{"q": "fine"}\n' + DEEP_OBJECT + "\n", encoding="utf-8")
    with pytest.raises(DatasetFileError, match=r"line 2.*nested"):
        list(read_rows(path))
    whole = tmp_path / "items.json"
    whole.write_text(DEEP, encoding="utf-8")
    with pytest.raises(DatasetFileError, match="nested"):
        list(read_rows(whole))
