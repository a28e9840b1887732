"""``coeval models --json``: bad input is JSON on stdout as well, with the documented exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from coeval.cli.main import cli


def test_no_credentials_is_json_and_exit_2(work: Path) -> None:
    result = CliRunner().invoke(cli, ["models", "--json"])
    assert result.exit_code == 2
    assert json.loads(result.stdout) == {
        "error": "no provider has credentials",
        "fix": "add keys to keys.yaml or set e.g. OPENAI_API_KEY, or name providers with --providers",
    }


def test_bad_key_file_is_json_without_the_key(work: Path) -> None:
    keys = work / "keys.yaml"
    keys.write_text("providers:\n  opneai: sk-models-json-0123456789\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["models", "--json", "--keys", str(keys)])
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert "did you mean 'openai'?" in error
    assert "sk-models-json" not in result.output


def test_help_states_the_exit_codes(work: Path) -> None:
    text = " ".join(CliRunner().invoke(cli, ["models", "--help"]).output.split())
    assert "Exit code 2 for bad input" in text and "1 when no provider could be listed" in text
