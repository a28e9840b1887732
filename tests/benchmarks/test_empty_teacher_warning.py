"""A benchmark teacher with nothing ingested is named at the end of the run, with the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli


def test_warning_until_something_is_ingested(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(cli, ["init", "-t", "benchmark"]).exit_code == 0
    first = CliRunner().invoke(cli, ["run", "coeval.yaml"])
    assert first.exit_code == 0, first.output
    assert "warning: benchmark teacher arc-challenge supplied no datapoints (nothing ingested into it yet)" in first.output
    assert "--teacher arc-challenge" in first.output
    assert "next: coeval analyze" not in first.output  # nothing to analyse yet: the warning says what is next

    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"prompt": "Which gas do plants take in? A) oxygen B) carbon dioxide"}) + "\n")
    ingested = CliRunner().invoke(cli, ["ingest", "--run", str(Path("runs") / "starter-benchmark"), "--file",
                                        str(rows), "--teacher", "arc-challenge", "--task-name",
                                        "arc_science_reasoning"])
    assert ingested.exit_code == 0, ingested.output
    resumed = CliRunner().invoke(cli, ["run", "coeval.yaml", "--continue"])
    assert resumed.exit_code == 0, resumed.output
    assert "supplied no datapoints" not in resumed.output
    assert "next: coeval analyze" in resumed.output
    assert "response_collection: 2/2 done" in resumed.output  # 1 item x 2 mock students


def test_quiet_hides_the_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(cli, ["init", "-t", "benchmark"]).exit_code == 0
    quiet = CliRunner().invoke(cli, ["run", "coeval.yaml", "-q"])
    assert quiet.exit_code == 0, quiet.output
    assert "benchmark teacher" not in quiet.output
    assert "next: coeval analyze" not in quiet.output
