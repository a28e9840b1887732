"""``run_experiment(..., RunOptions(progress=False))`` prints nothing: embedding programs own the console."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval.plugins.config_loading import load_config
from coeval.run.options import RunOptions
from coeval.run.runner import run_experiment


def test_progress_false_is_silent_and_still_runs(work: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    capfd.readouterr()
    result = run_experiment(load_config("coeval.yaml"), RunOptions(progress=False))
    out, err = capfd.readouterr()
    assert result.exit_code == 0
    assert result.counts()["evaluation"]["written"] == 40
    assert (out, err) == ("", "")


def test_progress_true_prints_one_summary_line_per_phase(work: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    capfd.readouterr()
    run_experiment(load_config("coeval.yaml"), RunOptions(progress=True))
    err = capfd.readouterr().err
    assert "evaluation: 40/40 done (40 ok, 0 failed)" in err
    assert f"coeval: run completed ({Path('runs') / 'starter-mock'}), exit code 0" in err
