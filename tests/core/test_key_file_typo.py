"""A misspelled provider in the key file stops the command with a did-you-mean, exit 2."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from coeval.cli.main import cli

SECRET = "sk-typo-test-0123456789abcdef"


def _keys(work: Path, provider: str) -> Path:
    path = work / "keys.yaml"
    path.write_text(f"providers:\n  {provider}: {SECRET}\n", encoding="utf-8")
    return path


def test_opneai_is_refused_with_did_you_mean_and_no_secret(work: Path) -> None:
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    result = CliRunner().invoke(cli, ["run", "coeval.yaml", "--dry-run", "--keys", str(_keys(work, "opneai"))])
    assert result.exit_code == 2
    assert "providers.opneai is not a known provider; did you mean 'openai'?" in result.output
    assert SECRET not in result.output
    assert "Traceback" not in result.output


def test_a_name_close_to_nothing_known_is_kept_for_plugins(work: Path) -> None:
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    result = CliRunner().invoke(cli, ["run", "coeval.yaml", "--dry-run", "--keys", str(_keys(work, "acme_llm"))])
    assert result.exit_code == 0, result.output
    assert "config is valid" in result.output
