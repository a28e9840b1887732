"""The reply flags (explained / copied) worked out while phase 5 is read: DuckDB's SQL and the
Python rule give the same answer for every shape a ``rationale`` can take, and the loader's
frame equals the one read from the files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from coeval_analysis.loading.jsonl import JSON_TEXT, MAP, TEXT, _read_slow, read_records
from coeval_analysis.loading.loader import load_run
from coeval_analysis.loading.reply_flags import REPLY_FLAG_COLUMNS, reply_flags
from coeval_analysis.warnings.judge_replies import judge_replies

#: (record fields, (explained, copied))
CASES: list[tuple[dict[str, Any], tuple[bool, bool]]] = [
    ({"scores": {"a": "High"}, "rationale": {"a": "Because it is right."}}, (True, False)),
    ({"scores": {"criterion_name": "High"}, "rationale": None}, (False, True)),
    ({"scores": {"a": "High"}, "rationale": {"a": "One sentence on why."}}, (False, True)),
    ({"scores": {"a": "High"}, "rationale": "a plain text reason"}, (True, False)),
    ({"scores": {"a": "High"}, "rationale": {"a": "   "}}, (False, False)),
    ({"scores": {"a": "High"}}, (False, False)),
    ({"scores": {"a": "High"}, "rationale": {"a": "ok", "b": 3}}, (True, False)),
    ({"scores": {"a": "High"}, "rationale": {"b": 3}}, (False, False)),
    ({"scores": "High", "rationale": [1, 2]}, (False, False)),
    ({"rationale": "ONE sentence on why!"}, (False, True)),
    ({"scores": {"Criterion Name!": "Low"}, "rationale": {"a": "Été is fine"}}, (True, True)),
    # the example's words inside a longer text, or split by other characters, are no copy
    ({"scores": {"criterion names": "Low"}, "rationale": {"a": "One sentence on why it fails."}}, (True, False)),
    ({"scores": {"a": "Low"}, "rationale": {"a": "one sen-tence on why", "b": "sentence"}}, (True, False)),
    ({"scores": {"a": "Low"}, "rationale": {"a": "-- One   SENTENCE on, why? --"}}, (False, True)),
]
COLUMNS = {"id": TEXT, "scores": MAP, "rationale": JSON_TEXT}


def _write(path: Path) -> Path:
    path.write_text("".join(json.dumps({"id": str(i), **rec}) + "\n" for i, (rec, _) in enumerate(CASES)))
    return path


def _flags(rows: list[dict[str, Any]]) -> list[tuple[bool, bool]]:
    return [(r["reply_explained"], r["reply_copied"]) for r in rows]


def test_duckdb_and_python_agree_with_the_rule(tmp_path: Path) -> None:
    path = _write(tmp_path / "e.jsonl")
    expected = [want for _, want in CASES]
    python_rule = [
        reply_flags(list(rec["scores"]) if isinstance(rec.get("scores"), dict) else [], rec.get("rationale"))
        for rec, _ in CASES
    ]
    assert python_rule == expected
    fast, _ = read_records([path], COLUMNS, REPLY_FLAG_COLUMNS, hidden=("rationale",))
    assert _flags(fast.to_pylist()) == expected
    slow = _read_slow(path, COLUMNS, REPLY_FLAG_COLUMNS, ("rationale",))
    assert _flags(slow.to_pylist()) == expected
    assert fast.column_names == slow.column_names == ["id", "scores", "reply_explained", "reply_copied"]


@pytest.fixture
def judged_run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    (run / "phase5_evaluations").mkdir(parents=True)
    lines = []
    for i, (rec, _) in enumerate(CASES):
        scores = rec.get("scores") if isinstance(rec.get("scores"), dict) else {"a": "High"}
        lines.append({
            "id": f"t__x__{i:05d}__s__j", "response_id": f"t__x__{i:05d}__s", "datapoint_id": f"t__x__{i:05d}",
            "task_id": "t", "teacher_model_id": "x", "student_model_id": "s", "judge_model_id": "j",
            "evaluator": "llm_judge", "scores": scores, "rationale": rec.get("rationale"), "status": "ok",
        })
    lines.append({**lines[0], "id": "t__x__00000__s__j2", "judge_model_id": "j2", "status": "failed"})
    (run / "phase5_evaluations" / "t.x.j.evaluations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return run


def test_the_loader_works_out_the_same_frame_as_a_separate_read(judged_run: Path) -> None:
    data = load_run(judged_run)
    assert data.replies is not None
    from_files = judge_replies(data, files=sorted((judged_run / "phase5_evaluations").glob("*.jsonl")))
    assert data.replies.to_dict("records") == from_files.to_dict("records")
    flagged = {
        int(str(data.response_ids[r]).split("__")[2]): (bool(e), bool(c))
        for r, e, c in zip(data.replies["response"], data.replies["explained"], data.replies["copied"], strict=True)
    }
    assert flagged == {i: want for i, (_, want) in enumerate(CASES) if any(want)}
    assert set(data.replies["judge"]) == {"j"}  # the failed record of j2 counts for nothing


def test_a_synthetic_run_with_transcripts_has_every_ok_judge_reply_explained(tmp_path: Path) -> None:
    from coeval_testing.synthetic import SyntheticSpec, write_synthetic_run

    spec = SyntheticSpec(datapoints_per_teacher=2, transcripts=True, failure_rate=0.1, seed=3)
    data = load_run(write_synthetic_run(tmp_path / "run", spec))
    ok_judged = data.records[~data.records["failed"] & (data.records["evaluator"] == "llm_judge")]
    assert data.replies is not None
    assert len(data.replies) == len(ok_judged) and bool(data.replies["explained"].all())
    assert not data.replies["copied"].any()
