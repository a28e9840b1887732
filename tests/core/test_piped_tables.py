"""Tables printed to a pipe or a file are never cut at 80 columns."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval.console import PIPE_WIDTH, output_console

LONG = "a-model-name-that-is-much-longer-than-any-terminal-default-" + "x" * 40


def long_names() -> Path:
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    path = Path("coeval.yaml")
    doc = yaml.safe_load(path.read_text())
    doc["models"][0]["name"] = LONG
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_status_and_plan_print_whole_cells_off_a_terminal(work: Path) -> None:
    long_names()
    assert CliRunner().invoke(cli, ["run", "coeval.yaml", "-q"]).exit_code == 0
    for args in (["status", "--config", "coeval.yaml"], ["plan", "--config", "coeval.yaml", "--estimate-samples", "0"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
        assert "…" not in result.output, args
        rows = [line for line in result.output.splitlines() if LONG in line]
        assert rows, args
        assert max(len(line) for line in result.output.splitlines()) > 120


def test_the_output_console_is_unbounded_off_a_terminal_and_sized_on_one(monkeypatch: pytest.MonkeyPatch) -> None:
    assert output_console().width == PIPE_WIDTH  # pytest captures stdout: not a terminal
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.setenv("COLUMNS", "93")
    assert output_console().width == 93
