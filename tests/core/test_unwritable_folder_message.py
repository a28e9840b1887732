"""A run folder that cannot be created says so, and does not send the user to --continue."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from coeval.cli.main import cli


def test_nothing_written_means_no_continue_hint(work: Path) -> None:
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    (work / "afile").write_text("", encoding="utf-8")
    config = work / "coeval.yaml"
    config.write_text(config.read_text().replace("storage_folder: ./runs", "storage_folder: ./afile/runs"))
    result = CliRunner().invoke(cli, ["run", "coeval.yaml"])
    assert result.exit_code == 2
    assert "cannot write afile/runs/starter-mock: Not a directory. Nothing was written" in result.output
    assert "--continue" not in result.output
    assert "Traceback" not in result.output
