"""``analyze`` writes its reports whole or not at all: a kill while writing leaves the
previous output as it was, the next analyze removes what the killed one left, and files
in the output folder that analyze does not write are kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli

RUN = Path("runs") / "starter-mock"
OUT = RUN / "analysis"


class _Killed(BaseException):
    pass


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_killed_analysis_leaves_the_previous_output_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    assert CliRunner().invoke(cli, ["run", "coeval.yaml"]).exit_code == 0
    first = CliRunner().invoke(cli, ["analyze", "--run", str(RUN), "--bootstrap", "20"])
    assert first.exit_code == 0, first.output
    (OUT / "my-notes.txt").write_text("mine")
    before = _files(OUT)

    from coeval_analysis import cli as analysis_cli

    real = analysis_cli._report_writers

    def dying_writers() -> tuple[dict[str, Any], set[str]]:
        writers, optional = real()
        names = [n for n in writers if n not in optional]

        def dies(analysis: Any, out: Path) -> list[Path]:
            raise _Killed

        writers = {**writers, names[-1]: dies}  # the last report dies after the others wrote theirs
        return writers, optional

    monkeypatch.setattr(analysis_cli, "_report_writers", dying_writers)
    with pytest.raises(_Killed):
        CliRunner().invoke(cli, ["analyze", "--run", str(RUN), "--bootstrap", "30", "--seed", "5"],
                           catch_exceptions=False)
    assert _files(OUT) == before  # not one file of the new analysis mixed in
    monkeypatch.setattr(analysis_cli, "_report_writers", real)

    killed = RUN / ".analysis.999999.new"  # a SIGKILLed analysis's staging folder (no such process)
    killed.mkdir()
    (killed / "summary.json").write_text("{")
    again = CliRunner().invoke(cli, ["analyze", "--run", str(RUN), "--bootstrap", "30", "--seed", "5"])
    assert again.exit_code == 0, again.output
    assert not killed.exists()
    assert sorted(p.name for p in RUN.iterdir() if p.name.startswith(".analysis")) == []
    assert (OUT / "my-notes.txt").read_text() == "mine"
    assert set(_files(OUT)) == set(before)
    assert _files(OUT)["summary.json"] != before["summary.json"]


def test_a_viewer_build_removes_the_part_files_of_killed_builders(tmp_path: Path) -> None:
    from coeval_analysis.output.leftovers import remove_dead_parts

    db = tmp_path / "run-abc.duckdb"
    dead = [tmp_path / "run-abc.999999.part", tmp_path / "run-abc.999999.part.wal"]
    alive = tmp_path / f"run-abc.{__import__('os').getpid()}.part"  # a build in progress
    for path in (*dead, alive):
        path.write_text("x")
    assert sorted(remove_dead_parts(db)) == sorted(dead)
    assert alive.exists() and not any(p.exists() for p in dead)
