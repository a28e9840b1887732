"""``status``/``analyze --run STORAGE_FOLDER`` list the runs inside instead of a dead end."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from coeval.cli.main import cli


def _two_runs(work: Path) -> None:
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    text = (work / "coeval.yaml").read_text()
    (work / "b.yaml").write_text(text.replace("id: starter-mock", "id: second"))
    for config in ("coeval.yaml", "b.yaml"):
        assert CliRunner().invoke(cli, ["run", config, "--limit", "1"]).exit_code == 0


def test_status_on_a_storage_folder_names_its_runs(work: Path) -> None:
    _two_runs(work)
    result = CliRunner().invoke(cli, ["status", "--run", "runs"])
    assert result.exit_code == 2
    assert (f"runs is a storage folder holding 2 run(s): second, starter-mock; pass --run {Path('runs') / 'second'}"
            in result.output)


def test_analyze_on_a_storage_folder_names_its_runs(work: Path) -> None:
    _two_runs(work)
    result = CliRunner().invoke(cli, ["analyze", "--run", "runs"])
    assert result.exit_code == 2
    assert "runs: not a run folder; runs is a storage folder holding 2 run(s): second, starter-mock" in result.output
    assert "no evaluation files" not in result.output
