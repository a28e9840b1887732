"""``coeval status``'s per-group table says what its rows are: models, or tasks in phases 1-2."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from coeval.cli.main import cli


def _shown(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_status_table_names_its_grouping_by_model_or_task(work: Path) -> None:
    _shown("init")
    _shown("run", "coeval.yaml")
    shown = _shown("status", "--config", "coeval.yaml")
    assert "records per model (per task in phases 1-2)" in shown
    rows = [[c.strip() for c in line.split("│")[1:3]] for line in shown.splitlines() if line.startswith("│")]
    assert ["attribute_mapping", "short_answer"] in rows and ["data_generation", "mock-a"] in rows
    assert "model / task" in shown
