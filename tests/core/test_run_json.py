"""``coeval run --json``: the last thing on stdout is a summary a script can parse."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli

#: coeval run in a subprocess, stdout read whole
pytestmark = pytest.mark.slow


def test_json_summary_is_the_whole_stdout_with_exact_counts(work: Path) -> None:
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    proc = subprocess.run([sys.executable, "-m", "coeval", "run", "coeval.yaml", "--json", "--limit", "2"],
                          capture_output=True, text=True, timeout=120, check=False, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["status"] == "completed"
    assert summary["exit_code"] == 0
    assert summary["run_folder"] == str(Path("runs") / "starter-mock")
    assert {name: phase["written"] for name, phase in summary["phases"].items()
            if name in ("data_generation", "response_collection", "evaluation")} == {
        "data_generation": 4, "response_collection": 8, "evaluation": 16}
    assert summary["calls"] == {"mock-a": 14, "mock-b": 14}
    assert summary["spend_usd"] == 0.0
    assert summary["next"] == f"coeval analyze --run {Path('runs') / 'starter-mock'}"


def test_without_json_stdout_stays_empty(work: Path) -> None:
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    proc = subprocess.run([sys.executable, "-m", "coeval", "run", "coeval.yaml", "--limit", "1"],
                          capture_output=True, text=True, timeout=120, check=False, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
