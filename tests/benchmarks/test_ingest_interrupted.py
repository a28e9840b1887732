"""``coeval ingest`` takes the run lock (never beside a run), and an interrupted ingest is
visible: status names it, ``--continue`` answers the rows it wrote, and running the same
ingest again finishes it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval.storage import run_folder
from coeval.storage.lock import RunLock

RUN = Path("runs") / "starter-mock"
ROWS = [{"question": f"What is {n} + {n}?", "answer": str(2 * n), "key": f"q{n:02d}"} for n in range(1, 11)]
ARGS = ["--task-name", "mine", "--prompt-field", "question", "--reference-field", "answer", "--id-field", "key"]


@pytest.fixture
def started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    assert CliRunner().invoke(cli, ["run", "coeval.yaml"]).exit_code == 0
    data = tmp_path / "mine.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    return data


def _ingest(data: Path) -> Any:
    return CliRunner().invoke(cli, ["ingest", "--run", str(RUN), "--file", str(data), *ARGS])


def test_ingest_beside_a_run_refuses(started: Path) -> None:
    with RunLock(RUN):  # a run is working in the folder
        busy = _ingest(started)
    assert busy.exit_code == 2, busy.output
    assert "another coeval process is using this run folder" in busy.output
    assert not (RUN / "phase3_datapoints" / "mine.mine-data.datapoints.jsonl").exists()


class _Killed(BaseException):
    pass


@pytest.mark.slow
def test_an_interrupted_ingest_is_visible_answered_and_finished(started: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = run_folder.JsonlWriter.write
    count = {"n": 0}

    def dies_after_4(self: Any, record: dict[str, Any]) -> None:
        count["n"] += 1
        if count["n"] > 4:
            raise _Killed
        real(self, record)

    monkeypatch.setattr(run_folder.JsonlWriter, "write", dies_after_4)
    with pytest.raises(_Killed):
        CliRunner().invoke(cli, ["ingest", "--run", str(RUN), "--file", str(started), *ARGS], catch_exceptions=False)
    monkeypatch.setattr(run_folder.JsonlWriter, "write", real)

    status = json.loads(CliRunner().invoke(cli, ["status", "--run", str(RUN), "--json"]).output)
    assert status["status"] == "incomplete (ingest interrupted)"
    assert status["notes"][0].startswith("ingest of file into task mine was interrupted")

    resumed = CliRunner().invoke(cli, ["run", "coeval.yaml", "--continue"])
    assert resumed.exit_code == 0, resumed.output
    answers = RUN / "phase4_responses" / "mine.mine-data.mock-a.responses.jsonl"
    assert len(answers.read_text().splitlines()) == 4  # the rows written are answered

    finished = _ingest(started)
    assert finished.exit_code == 0, finished.output
    assert "wrote 6 datapoint(s)" in finished.output
    meta = json.loads((RUN / "meta.json").read_text())
    mine = [e for e in meta["ingest_log"] if e["task_name"] == "mine"]
    assert [e["complete"] for e in mine] == [True]
    assert CliRunner().invoke(cli, ["run", "coeval.yaml", "--continue"]).exit_code == 0
    assert len(answers.read_text().splitlines()) == 10


def test_a_row_with_a_lone_surrogate_is_a_row_error_and_nothing_is_written(started: Path) -> None:
    bad = started.parent / "bad.jsonl"
    rows = [*ROWS[:3], {"question": "Smile \ud83d", "answer": "x", "key": "q99"}]
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")  # escaped: \\ud83d
    result = _ingest(bad)
    assert result.exit_code == 2, result.output
    assert "row q99: text is not valid Unicode" in result.output and "Traceback" not in result.output
    assert not (RUN / "phase3_datapoints" / "mine.mine-data.datapoints.jsonl").exists()
    meta = json.loads((RUN / "meta.json").read_text())
    assert not [e for e in meta["ingest_log"] if e.get("task_name") == "mine"]
