"""``coeval init``: a starter config a new user can validate and run without a checkout."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from coeval.cli.init_templates import TEMPLATES
from coeval.cli.main import cli


@pytest.mark.parametrize("template", sorted(TEMPLATES))
def test_each_template_passes_dry_run_in_an_empty_folder(work: Path, template: str) -> None:
    written = CliRunner().invoke(cli, ["init", "--template", template])
    assert written.exit_code == 0, written.output
    assert (work / "coeval.yaml").is_file()
    assert "next: coeval run --config coeval.yaml --dry-run" in written.output

    dry = CliRunner().invoke(cli, ["run", "--config", "coeval.yaml", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "config is valid" in dry.output
    assert sorted(p.name for p in work.iterdir()) == ["coeval.yaml"]


def test_templates_are_commented_and_name_their_file(work: Path) -> None:
    result = CliRunner().invoke(cli, ["init", "my.yaml", "-t", "openai"])
    assert result.exit_code == 0, result.output
    text = (work / "my.yaml").read_text(encoding="utf-8")
    assert text.startswith("# ")
    assert "coeval run --config my.yaml --dry-run" in text
    config = yaml.safe_load(text)
    assert [m["interface"] for m in config["models"]] == ["openai", "openai"]


def test_default_mock_template_runs_to_the_counts_it_promises(work: Path) -> None:
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    text = (work / "coeval.yaml").read_text(encoding="utf-8")
    assert "10 datapoints, 20 answers, 40 grades" in text

    result = CliRunner().invoke(cli, ["run", "--config", "coeval.yaml"])
    assert result.exit_code == 0, result.output
    run = work / "runs" / "starter-mock"

    def lines(phase: str) -> int:
        return sum(len(p.read_text(encoding="utf-8").splitlines()) for p in (run / phase).glob("*.jsonl"))

    assert (lines("phase3_datapoints"), lines("phase4_responses"), lines("phase5_evaluations")) == (10, 20, 40)


def test_existing_file_is_kept_without_force(work: Path) -> None:
    (work / "coeval.yaml").write_text("mine: 1\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["init"])
    assert result.exit_code == 2
    assert "coeval.yaml already exists; nothing written" in result.output
    assert "--force" in result.output
    assert (work / "coeval.yaml").read_text(encoding="utf-8") == "mine: 1\n"

    forced = CliRunner().invoke(cli, ["init", "--force", "-t", "local"])
    assert forced.exit_code == 0, forced.output
    assert "interface: llamacpp" in (work / "coeval.yaml").read_text(encoding="utf-8")


def test_missing_folder_and_unknown_template_exit_2(work: Path) -> None:
    missing = CliRunner().invoke(cli, ["init", "nowhere/c.yaml"])
    assert missing.exit_code == 2
    assert "folder nowhere does not exist" in missing.output
    assert not (work / "nowhere").exists()

    unknown = CliRunner().invoke(cli, ["init", "-t", "opneai"])
    assert unknown.exit_code == 2
    assert "opneai" in unknown.output
    assert not (work / "coeval.yaml").exists()


def test_list_names_every_template(work: Path) -> None:
    result = CliRunner().invoke(cli, ["init", "--list"])
    assert result.exit_code == 0
    assert [line.split()[0] for line in result.output.splitlines()] == ["benchmark", "local", "mock", "openai"]
    assert not (work / "coeval.yaml").exists()
