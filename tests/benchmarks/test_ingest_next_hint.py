"""``coeval ingest`` ends with the next step like every command, and ``-q`` leaves it out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli

RUN = Path("runs") / "starter-mock"
NEXT = "next: `coeval run --config CONFIG --continue` collects responses and evaluations for them\n"


@pytest.fixture
def started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A finished mock starter run in ``tmp_path``."""
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    assert CliRunner().invoke(cli, ["run", "coeval.yaml"]).exit_code == 0
    return tmp_path


def _ingest(data: Path, task: str, *flags: str) -> str:
    result = CliRunner().invoke(cli, ["ingest", *flags, "--run", str(RUN), "--file", str(data),
                                      "--task-name", task, "--prompt-field", "question"])
    assert result.exit_code == 0, result.output
    return result.output


def test_ingest_prints_the_next_step_and_quiet_leaves_it_out(started: Path) -> None:
    data = started / "q.jsonl"
    data.write_text(json.dumps({"question": "What is 2 + 2?"}) + "\n", encoding="utf-8")
    shown = _ingest(data, "mine")
    assert shown.startswith("file: wrote 1 datapoint(s) to task mine as teacher mine-data")
    assert shown.endswith(NEXT)
    quiet = _ingest(data, "other", "-q")
    assert quiet.startswith("file: wrote 1 datapoint(s) to task other as teacher other-data")
    assert "next:" not in quiet
