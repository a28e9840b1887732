"""Ways in to the command line: ``coeval run CONFIG`` and ``python -m coeval``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli


def _starter(work: Path) -> None:
    assert CliRunner().invoke(cli, ["init", "c.yaml"]).exit_code == 0


def test_run_takes_the_config_as_a_positional_argument(work: Path) -> None:
    _starter(work)
    result = CliRunner().invoke(cli, ["run", "c.yaml"])
    assert result.exit_code == 0, result.output
    datapoints = list((work / "runs" / "starter-mock" / "phase3_datapoints").glob("*.jsonl"))
    assert len(datapoints) == 2


def test_positional_and_option_naming_the_same_file_agree(work: Path) -> None:
    _starter(work)
    result = CliRunner().invoke(cli, ["run", "c.yaml", "--config", "c.yaml", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "config is valid" in result.output


def test_two_different_configs_or_none_exit_2_without_writing(work: Path) -> None:
    _starter(work)
    two = CliRunner().invoke(cli, ["run", "c.yaml", "--config", "other.yaml"])
    assert two.exit_code == 2
    assert "two configs given: c.yaml and --config other.yaml" in two.output
    none = CliRunner().invoke(cli, ["run"])
    assert none.exit_code == 2
    assert "no config given" in none.output
    assert "Traceback" not in two.output + none.output
    assert not (work / "runs").exists()


@pytest.mark.slow
def test_python_dash_m_coeval_runs_the_same_cli(work: Path) -> None:
    _starter(work)
    proc = subprocess.run(
        [sys.executable, "-m", "coeval", "run", "c.yaml", "--dry-run"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Dry run: config is valid; no call made, no file written." in proc.stdout
