"""``coeval keys set`` / ``coeval keys list``: the key file managed from the command line."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from coeval.cli import keys_cmd
from coeval.cli.main import cli
from coeval.config.credentials import KeyStore
from coeval.plugins.manager import registries

SECRET = "sk-test-0123456789abcdefWXYZ"


@pytest.fixture(autouse=True)
def no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys in the developer's environment would show up in ``keys list``."""
    regs = registries()
    for interface in regs.interfaces.names():
        for name in regs.interface_facts(interface).key_env:  # type: ignore[union-attr]
            monkeypatch.delenv(name, raising=False)


def keys_file(home: Path) -> Path:
    return home / ".coeval" / "keys.yaml"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_set_reads_stdin_writes_a_private_file_and_never_shows_the_value(work: Path) -> None:
    result = CliRunner().invoke(cli, ["keys", "set", "openai"], input=SECRET + "\n")
    assert result.exit_code == 0, result.output
    path = keys_file(work)
    assert result.output == f"saved the openai key to {path} (mode 600)\n"
    assert mode(path) == 0o600 and mode(path.parent) == 0o700
    assert yaml.safe_load(path.read_text())["providers"] == {"openai": SECRET}
    assert KeyStore.load().for_provider("openai").api_key == SECRET  # what a run reads


def test_set_on_a_terminal_prompts_without_echo(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keys_cmd, "_on_terminal", lambda: True)
    result = CliRunner().invoke(cli, ["keys", "set", "anthropic"], input=SECRET + "\n")
    assert result.exit_code == 0, result.output
    assert "anthropic key: " in result.output and SECRET not in result.output
    assert yaml.safe_load(keys_file(work).read_text())["providers"] == {"anthropic": SECRET}


def test_set_keeps_other_entries_and_tightens_a_readable_file(work: Path) -> None:
    path = work / "keys.yaml"
    path.write_text("providers:\n  groq: gsk-kept\n  bedrock:\n    region: eu-west-1\n")
    path.chmod(0o644)
    runner = CliRunner()
    result = runner.invoke(cli, ["keys", "set", "openai"], input=SECRET)
    assert result.exit_code == 0, result.output
    assert f"warning: {path} was readable by other users; it is now mode 600" in result.output
    assert runner.invoke(cli, ["keys", "set", "bedrock", "--field", "api_key"], input="brk-token\n").exit_code == 0
    assert yaml.safe_load(path.read_text())["providers"] == {
        "groq": "gsk-kept",
        "bedrock": {"region": "eu-west-1", "api_key": "brk-token"},
        "openai": SECRET,
    }
    assert mode(path) == 0o600 and not keys_file(work).exists()  # ./keys.yaml is the file in use


def test_an_unknown_provider_exits_2_with_a_did_you_mean_and_writes_nothing(work: Path) -> None:
    result = CliRunner().invoke(cli, ["keys", "set", "opneai"], input=SECRET)
    assert result.exit_code == 2
    assert result.output.splitlines()[0] == "error: unknown provider 'opneai' (did you mean 'openai'?)"
    assert not keys_file(work).exists()
    empty = CliRunner().invoke(cli, ["keys", "set", "openai"], input="\n")
    assert empty.exit_code == 2 and "error: no key given; nothing written" in empty.output
    assert not keys_file(work).exists()


def test_list_names_each_source_with_the_value_masked(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert CliRunner().invoke(cli, ["keys", "set", "openai"], input=SECRET).exit_code == 0
    monkeypatch.setenv("GROQ_API_KEY", "gsk-from-the-environment-7777")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-ignored-because-the-file-wins")
    text = CliRunner().invoke(cli, ["keys", "list"])
    assert text.exit_code == 0, text.output
    path = keys_file(work)
    assert text.output.splitlines() == [
        "groq    ****7777      env: GROQ_API_KEY",
        f"openai  ****WXYZ      key file: {path}",
    ]
    as_json = CliRunner().invoke(cli, ["keys", "list", "--json"])
    assert json.loads(as_json.output) == {
        "key_file": str(path),
        "keys": [
            {"provider": "groq", "source": "env", "where": "GROQ_API_KEY", "masked": "****7777"},
            {"provider": "openai", "source": "key file", "where": str(path), "masked": "****WXYZ"},
        ],
    }
    for output in (text.output, as_json.output):
        assert SECRET not in output and "gsk-from-the-environment" not in output


def test_list_warns_about_a_file_other_users_can_read(work: Path) -> None:
    path = work / "keys.yaml"
    path.write_text("providers:\n  openai: short\n")
    path.chmod(0o640)
    result = CliRunner().invoke(cli, ["keys", "list"])
    assert result.exit_code == 0
    assert result.output.splitlines() == [
        f"warning: {path} is readable by other users; fix: chmod 600 {path}",
        f"openai  ****          key file: {path}",
    ]
    none = CliRunner().invoke(cli, ["keys", "list", "--keys", str(work / "other.yaml")])
    assert none.exit_code == 2 and "error: key file" in none.output


def test_a_key_file_path_that_cannot_be_written_is_a_clean_error(work: Path) -> None:
    folder = work / "a-folder"
    folder.mkdir()
    result = CliRunner().invoke(cli, ["keys", "set", "openai", "--keys", str(folder)], input=SECRET)
    assert result.exit_code == 2
    assert result.output.splitlines()[0] == f"error: {folder}: not a file; nothing written"
    blocker = work / "a-file"
    blocker.write_text("")
    target = blocker / "keys.yaml"  # its folder is a file: no one can create it, root included
    result = CliRunner().invoke(cli, ["keys", "set", "openai", "--keys", str(target)], input=SECRET)
    assert result.exit_code == 2
    assert result.output.splitlines()[0] == f"error: {target}: {blocker} is a file, not a folder; nothing written"
    assert SECRET not in result.output and "Traceback" not in result.output


def test_list_of_a_missing_key_file_says_how_to_fix_the_path(work: Path) -> None:
    result = CliRunner().invoke(cli, ["keys", "list", "--keys", "nowhere.yaml"])
    assert result.exit_code == 2
    assert result.output == (
        "error: key file nowhere.yaml: not found\n"
        "    fix: check the path given with --keys or $COEVAL_KEYS_FILE; "
        "`coeval keys set PROVIDER --keys PATH` creates the file\n"
    )
    assert not (work / "nowhere.yaml").exists()


def test_a_key_file_of_the_wrong_shape_names_the_expected_shape(work: Path) -> None:
    (work / "keys.yaml").write_text("- openai\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["keys", "list", "--keys", "keys.yaml"])
    assert result.exit_code == 2
    assert result.output.endswith(
        "    fix: the key file holds `providers:` with one entry per provider (see docs/configuration.md)\n"
    )


def test_list_keeps_its_columns_when_an_entry_has_fields_and_no_key(work: Path) -> None:
    assert CliRunner().invoke(cli, ["keys", "set", "openai"], input=SECRET).exit_code == 0
    assert CliRunner().invoke(cli, ["keys", "set", "bedrock", "--field", "region"], input="us-east-1\n").exit_code == 0
    text = CliRunner().invoke(cli, ["keys", "list"])
    assert text.exit_code == 0, text.output
    path = keys_file(work)
    assert text.output.splitlines() == [
        f"bedrock  fields: region  key file: {path}",
        f"openai   ****WXYZ        key file: {path}",
    ]
