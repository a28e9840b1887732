"""``coeval ingest --file``: a user's own rows become a task every student answers and every judge scores."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from coeval.cli.main import cli

from tests.benchmarks.conftest import snapshot

ROWS = [
    {"question": "What is 2 + 2?", "answer": "4", "key": "q1", "kind": "math"},
    {"question": "What is the capital of France?", "answer": "Paris", "key": "q2", "kind": "geo"},
    {"question": "Which planet is the largest?", "answer": "Jupiter", "key": "q3", "kind": "space"},
]
RUN = Path("runs") / "starter-mock"


@pytest.fixture
def started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A finished mock starter run (mock-a and mock-b answer and judge) in ``tmp_path``."""
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    first = CliRunner().invoke(cli, ["run", "coeval.yaml"])
    assert first.exit_code == 0, first.output
    return tmp_path


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _ingest(*args: str) -> object:
    return CliRunner().invoke(cli, ["ingest", "--run", str(RUN), *args])


def test_three_jsonl_rows_are_answered_by_every_student_and_judged(started: Path) -> None:
    data = started / "mine.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    result = _ingest("--file", str(data), "--task-name", "mine", "--prompt-field", "question",
                     "--reference-field", "answer", "--id-field", "key")
    assert result.exit_code == 0, result.output
    assert "wrote 3 datapoint(s) to task mine as teacher mine-data" in result.output
    datapoints = _lines(RUN / "phase3_datapoints" / "mine.mine-data.datapoints.jsonl")
    assert [d["id"] for d in datapoints] == ["mine__mine-data__q1", "mine__mine-data__q2", "mine__mine-data__q3"]
    assert datapoints[1]["prompt"] == "What is the capital of France?"
    assert datapoints[1]["reference_response"] == "Paris"

    before = snapshot(RUN)
    again = _ingest("--file", str(data), "--task-name", "mine", "--prompt-field", "question",
                    "--reference-field", "answer", "--id-field", "key")
    assert again.exit_code == 0 and "nothing new; all 3 item(s)" in again.output
    assert snapshot(RUN) == before

    resumed = CliRunner().invoke(cli, ["run", "coeval.yaml", "--continue"])
    assert resumed.exit_code == 0, resumed.output
    for student in ("mock-a", "mock-b"):
        answers = _lines(RUN / "phase4_responses" / f"mine.mine-data.{student}.responses.jsonl")
        assert sorted(a["datapoint_id"] for a in answers) == [d["id"] for d in datapoints]
    judged = [e for p in (RUN / "phase5_evaluations").glob("mine.*.jsonl") for e in _lines(p)]
    by_judge = sorted(str(e["judge_model_id"]) for e in judged if e["judge_model_id"] != "gold")
    assert by_judge == ["mock-a"] * 6 + ["mock-b"] * 6  # 3 rows x 2 students, each judge


def test_csv_and_parquet_rows_and_a_label_column(started: Path) -> None:
    csv_path = started / "mine.csv"
    with csv_path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(ROWS[0]))
        writer.writeheader()
        writer.writerows(ROWS)
    result = _ingest("--file", str(csv_path), "--task-name", "from_csv", "--prompt-field", "question",
                     "--label-field", "kind")
    assert result.exit_code == 0, result.output
    rows = _lines(RUN / "phase3_datapoints" / "from_csv.from_csv-data.datapoints.jsonl")
    assert [r["sampled_target_attributes"] for r in rows] == [{"label": "math"}, {"label": "geo"}, {"label": "space"}]
    assert [r["id"] for r in rows] == [f"from_csv__from_csv-data__row00000{i}" for i in (1, 2, 3)]

    parquet_path = started / "mine.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS), parquet_path)
    result = _ingest("--file", str(parquet_path), "--task-name", "from_parquet", "--prompt-field", "question")
    assert result.exit_code == 0, result.output
    assert len(_lines(RUN / "phase3_datapoints" / "from_parquet.from_parquet-data.datapoints.jsonl")) == 3


def test_row_errors_name_the_file_row_field_and_option_and_write_nothing(started: Path) -> None:
    data = started / "bad.jsonl"
    data.write_text(json.dumps(ROWS[0]) + "\n" + json.dumps({"answer": "x"}) + "\n", encoding="utf-8")
    before = snapshot(RUN)
    result = _ingest("--file", str(data), "--task-name", "bad", "--prompt-field", "question")
    assert result.exit_code == 2
    assert f"{data} row 2: field 'question' (--prompt-field) is missing or empty; the row has: answer" in result.output
    assert "Traceback" not in result.output
    assert snapshot(RUN) == before

    no_task = _ingest("--file", str(data))
    assert no_task.exit_code == 2 and "--file needs --task-name" in no_task.output
    missing = _ingest("--file", str(started / "nope.jsonl"), "--task-name", "t")
    assert missing.exit_code == 2 and "nope.jsonl: no such file (--file)" in missing.output
    both = _ingest("--file", str(data), "--task-name", "t", "-b", "sciq")
    assert both.exit_code == 2 and "name no benchmark with it" in both.output
