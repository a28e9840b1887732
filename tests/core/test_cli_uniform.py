"""What every command shares: ``-q/--quiet`` and ``-v/--verbose``, and one error prefix."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval.plugins.manager import reset_plugins

COMMAND_ROW = re.compile(r"^  (\w[\w-]*)  ", re.M)


def listed_commands() -> list[str]:
    """The commands ``coeval --help`` lists, plugin commands included."""
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0, result.output
    return COMMAND_ROW.findall(result.output.split("Commands:", 1)[1])


def walk(ctx: click.Context, command: click.Command, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], click.Command]]:
    out = [(path, command)]
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None
            out += walk(ctx, sub, (*path, name))
    return out


def test_every_command_has_quiet_and_verbose() -> None:
    names = listed_commands()
    assert {"run", "status", "analyze", "keys", "init", "ingest", "view", "export", "schema"} <= set(names)
    ctx = click.Context(cli)
    commands = [pair for name in names for pair in walk(ctx, cli.get_command(ctx, name), (name,))]  # type: ignore[arg-type]
    assert ("keys", "set") in [path for path, _ in commands]
    for path, command in commands:
        options = {opt: param for param in command.params for opt in param.opts}
        assert {"-q", "--quiet", "-v", "--verbose"} <= set(options), path
        help_text = CliRunner().invoke(cli, [*path, "--help"]).output
        assert "-q, --quiet" in help_text and "-v, --verbose" in help_text, path


@pytest.mark.parametrize(
    "command", [["schema"], ["init"], ["plugins"], ["keys", "list"], ["repair", "--run", "."], ["models"]]
)
def test_quiet_and_verbose_together_is_the_same_usage_error_everywhere(work: Path, command: list[str]) -> None:
    result = CliRunner().invoke(cli, [*command, "-q", "-v"])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == "error: -q/--quiet and -v/--verbose cannot be used together"


def test_quiet_leaves_out_informational_lines(work: Path) -> None:
    normal = CliRunner().invoke(cli, ["init", "a.yaml"])
    assert normal.output.splitlines() == ["wrote a.yaml (mock template)", "next: coeval run --config a.yaml --dry-run"]
    quiet = CliRunner().invoke(cli, ["init", "b.yaml", "-q"])
    assert quiet.exit_code == 0 and quiet.output == "wrote b.yaml (mock template)\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--no-such-option"], "error: No such option '--no-such-option'."),
        (["no-such-command"], "error: No such command 'no-such-command'."),
        (["status", "--run", "runs/none"], "error: runs/none: no such run folder"),
        (["run", "--keys", "missing.yaml", "coeval.yaml"], "error: key file missing.yaml: not found"),
    ],
)
def test_every_error_line_starts_with_one_prefix(work: Path, args: list[str], message: str) -> None:
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert message in result.output.splitlines()
    assert "Error:" not in result.output and "coeval: error" not in result.output


def test_a_run_error_uses_the_same_prefix(work: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    path = work / "c.yaml"
    assert CliRunner().invoke(cli, ["init", str(path), "--template", "openai"]).exit_code == 0
    monkeypatch.setenv("COEVAL_DISABLE_PLUGINS", "providers")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-placeholder-for-the-test")
    reset_plugins()
    try:
        result = CliRunner().invoke(cli, ["run", str(path), "--yes", "--skip-probe"])
    finally:
        monkeypatch.delenv("COEVAL_DISABLE_PLUGINS")
        reset_plugins()
    err = capfd.readouterr().err + result.output
    assert result.exit_code == 2, err
    assert "needs coeval-providers, which is installed but disabled (COEVAL_DISABLE_PLUGINS names 'providers')" in err
    assert "not installed" not in err
    assert next(line for line in err.splitlines() if "rror" in line).startswith("error: model ")


def coeval_subprocess(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A fresh process: plugin commands are registered once per process."""
    return subprocess.run(
        [sys.executable, "-m", "coeval", *args], env={**os.environ, **env}, capture_output=True, text=True, timeout=120
    )


def test_a_disabled_plugins_command_says_disabled_and_names_the_variable(work: Path) -> None:
    result = coeval_subprocess(["analyze", "--run", "runs/x"], {"COEVAL_DISABLE_PLUGINS": "analysis"})
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "error: command 'analyze' needs coeval-analysis, which is installed but disabled "
        "(COEVAL_DISABLE_PLUGINS names 'analysis')"
    )


def test_a_missing_plugin_command_gives_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from coeval.contract import status as plugin_status

    monkeypatch.setattr(plugin_status, "_installed", lambda distribution: False)
    monkeypatch.setenv("COEVAL_DISABLE_PLUGINS", "analysis")
    assert plugin_status.unavailable_reason("coeval-analysis") == (
        "which is not installed: pip install coeval-analysis"
    )
    assert plugin_status.missing_interface("openai") == (
        "interface 'openai' needs coeval-providers, which is not installed: pip install coeval-providers"
    )
    monkeypatch.delenv("COEVAL_DISABLE_PLUGINS")
    monkeypatch.setattr(plugin_status, "_installed", lambda distribution: True)
    assert plugin_status.unavailable_reason("coeval-analysis") == (
        "which is not installed: pip install coeval-analysis"  # installed, not disabled, yet absent: reinstall
    )
