"""``status --config`` and ``analyze --config`` find the run folder the config names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli


def test_status_and_analyze_take_the_config(work: Path) -> None:
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    assert CliRunner().invoke(cli, ["run", "coeval.yaml", "--limit", "2"]).exit_code == 0
    status = CliRunner().invoke(cli, ["status", "--config", "coeval.yaml", "--json"])
    assert status.exit_code == 0, status.output
    assert json.loads(status.output)["status"] == "partial (limited to 2 datapoints per (task, teacher))"
    analyzed = CliRunner().invoke(cli, ["analyze", "--config", "coeval.yaml", "-q", "--bootstrap", "0"])
    assert analyzed.exit_code == 0, analyzed.output
    assert (work / "runs" / "starter-mock" / "analysis" / "summary.json").is_file()


def test_neither_or_both_is_a_usage_error(work: Path) -> None:
    for command in ("status", "analyze"):
        none = CliRunner().invoke(cli, [command])
        assert none.exit_code == 2 and "no run given" in none.output
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    for command in ("status", "analyze"):
        both = CliRunner().invoke(cli, [command, "--run", "runs/x", "--config", "coeval.yaml"])
        assert both.exit_code == 2 and "give --run or --config, not both" in both.output


@pytest.mark.slow
def test_with_neither_the_coeval_yaml_of_the_folder_is_used(work: Path) -> None:
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0  # writes coeval.yaml
    ran = CliRunner().invoke(cli, ["run"])
    assert ran.exit_code == 0, ran.output
    status = CliRunner().invoke(cli, ["status", "-q"])
    assert (status.exit_code, status.output) == (0, "runs/starter-mock: completed\n")
    analyzed = CliRunner().invoke(cli, ["analyze", "-q"])
    assert analyzed.exit_code == 0, analyzed.output
    assert (work / "runs" / "starter-mock" / "analysis" / "summary.json").is_file()
