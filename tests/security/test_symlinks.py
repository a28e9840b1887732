"""A run folder someone shared may hold symbolic links pointing outside it: CoEval never
writes through them (no truncation, no append to the target) and ``resume_from`` does not
copy what they point to. Each case ends in a clear error naming the link, exit code 2."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.robustness._support import base_config, invoke, no_traceback, write_config

PRECIOUS = "precious data, not a record"  # no newline at the end: a cut of a 'partial line' would take it


@pytest.fixture
def finished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A finished mock run and its config."""
    monkeypatch.chdir(tmp_path)
    config = base_config(tmp_path / "runs")
    config["experiment"]["probe_mode"] = "disable"
    path = write_config(tmp_path / "exp.yaml", config)
    result = invoke(["run", "--config", str(path)])
    assert result.exit_code == 0, result.output
    return tmp_path / "runs" / "robust", path


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "outside" / "victim.txt"
    victim.parent.mkdir()
    victim.write_text(PRECIOUS, encoding="utf-8")
    return victim


def _link(link: Path, target: Path) -> None:
    link.unlink(missing_ok=True)
    os.symlink(target, link)


def test_a_symlinked_record_file_is_not_written_through(finished: tuple[Path, Path], tmp_path: Path) -> None:
    run, config = finished
    victim = _victim(tmp_path)
    evaluations = sorted((run / "phase5_evaluations").glob("*.jsonl"))[0]
    _link(evaluations, victim)
    result = invoke(["run", "--config", str(config), "--continue"])
    no_traceback(result)
    assert victim.read_text(encoding="utf-8") == PRECIOUS
    assert result.exit_code == 2, result.output
    assert "symbolic link" in result.output and evaluations.name in result.output, result.output


def test_a_symlinked_run_log_is_not_appended_to(finished: tuple[Path, Path], tmp_path: Path) -> None:
    run, config = finished
    victim = _victim(tmp_path)
    _link(run / "run.log", victim)
    result = invoke(["run", "--config", str(config), "--continue"])
    no_traceback(result)
    assert victim.read_text(encoding="utf-8") == PRECIOUS
    assert result.exit_code == 2, result.output
    assert "symbolic link" in result.output and "run.log" in result.output, result.output


def test_a_symlinked_phase_folder_is_not_written_through(finished: tuple[Path, Path], tmp_path: Path) -> None:
    run, config = finished
    outside = tmp_path / "elsewhere"
    (run / "phase5_evaluations").rename(outside)
    for f in outside.glob("*.jsonl"):  # an incomplete phase: --continue has records to write
        f.write_text(f.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    before = {f.name: f.read_text(encoding="utf-8") for f in outside.iterdir()}
    os.symlink(outside, run / "phase5_evaluations")
    result = invoke(["run", "--config", str(config), "--continue"])
    no_traceback(result)
    assert {f.name: f.read_text(encoding="utf-8") for f in outside.iterdir()} == before
    assert result.exit_code == 2, result.output
    assert "symbolic link" in result.output, result.output


def test_resume_from_does_not_copy_what_a_link_points_to(finished: tuple[Path, Path], tmp_path: Path) -> None:
    run, _ = finished
    secret = tmp_path / "outside-secret.jsonl"
    secret.write_text(json.dumps({"id": "x", "prompt": "THE-PRIVATE-TEXT"}) + "\n", encoding="utf-8")
    os.symlink(secret, run / "phase3_datapoints" / "stolen.datapoints.jsonl")
    config = base_config(tmp_path / "runs")
    config["experiment"].update(id="forked", resume_from="robust", probe_mode="disable")
    path = write_config(tmp_path / "fork.yaml", config)
    result = invoke(["run", "--config", str(path)])
    no_traceback(result)
    assert result.exit_code == 2, result.output
    assert "symbolic link" in result.output and "stolen.datapoints.jsonl" in result.output, result.output
    copied = [p for p in (tmp_path / "runs" / "forked").rglob("*") if p.is_file()]
    assert not any(b"THE-PRIVATE-TEXT" in p.read_bytes() for p in copied)
