"""Plugin discovery: a third-party distribution registers through the `coeval` entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PLUGIN_SOURCE = textwrap.dedent(
    '''
    """A throwaway third-party CoEval plugin."""
    import os
    from pathlib import Path

    from coeval.contract.hookspecs import hookimpl
    from coeval.interfaces import GenerateResult, Interface

    Path(os.environ["MARKER_FILE"]).write_text("imported")


    class EchoInterface(Interface):
        name = "echo"

        async def generate(self, request):
            return GenerateResult(text=request.prompt)


    class ShoutMetric:
        def score(self, candidates, references):
            return [float(c.upper() == r.upper()) for c, r in zip(candidates, references)]


    @hookimpl
    def register_interfaces(register):
        register("echo", EchoInterface)


    @hookimpl
    def register_metrics(register):
        register("shout_match", ShoutMetric)
    '''
)


def _path_with(site: Path) -> str:
    """``site`` first, then whatever PYTHONPATH the tests run with (a checkout's sources)."""
    return os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)


@pytest.fixture
def installed_plugin(tmp_path: Path) -> dict[str, str]:
    """Install a plugin the way pip would: a module plus a dist-info with entry_points.txt."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "coeval_echo_plugin.py").write_text(PLUGIN_SOURCE)
    dist = site / "coeval_echo_plugin-1.2.3.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: coeval-echo-plugin\nVersion: 1.2.3\n")
    (dist / "entry_points.txt").write_text("[coeval]\necho = coeval_echo_plugin\n")
    (dist / "RECORD").write_text("")
    marker = tmp_path / "imported.txt"
    env = {**os.environ, "PYTHONPATH": _path_with(site), "MARKER_FILE": str(marker)}
    env.pop("COEVAL_DISABLE_PLUGINS", None)
    return {"env": env, "marker": str(marker)}  # type: ignore[dict-item]


def _plugins_json(env: dict[str, str]) -> list[dict]:
    out = subprocess.run(
        [sys.executable, "-m", "coeval.cli.main", "plugins", "--json"],
        env=env, capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout)


@pytest.mark.slow
def test_third_party_plugin_is_listed_with_what_it_registered(installed_plugin):
    report = {p["name"]: p for p in _plugins_json(installed_plugin["env"])}
    assert "echo" in report
    assert report["echo"]["distribution"] == "coeval-echo-plugin 1.2.3"
    assert report["echo"]["interfaces"] == ["echo"]
    assert report["echo"]["metrics"] == ["shout_match"]
    assert "mock" in report["core"]["interfaces"]
    assert Path(installed_plugin["marker"]).exists()


@pytest.mark.slow
def test_disabled_plugin_is_not_imported(installed_plugin):
    env = {**installed_plugin["env"], "COEVAL_DISABLE_PLUGINS": "echo"}
    report = {p["name"] for p in _plugins_json(env)}
    assert "echo" not in report
    assert "core" in report
    assert not Path(installed_plugin["marker"]).exists()


@pytest.mark.slow
def test_text_listing_names_plugins_and_registrations(installed_plugin):
    out = subprocess.run(
        [sys.executable, "-m", "coeval.cli.main", "plugins"],
        env=installed_plugin["env"], capture_output=True, text=True, check=True,
    ).stdout
    assert "echo  (coeval-echo-plugin 1.2.3)" in out
    assert "interfaces: echo" in out


def test_duplicate_registration_is_an_error():
    from coeval.plugins.manager import DuplicateRegistrationError, Registry

    reg: Registry[int] = Registry("metric")
    reg.add("bleu", 1, "a")
    with pytest.raises(DuplicateRegistrationError, match="'bleu' registered twice"):
        reg.add("bleu", 2, "b")


CLASH_SOURCE = textwrap.dedent(
    '''
    """A plugin that registers a name the core already has, and one command."""
    import click

    from coeval.contract.hookspecs import hookimpl
    from coeval.interfaces.mock import MockInterface


    @hookimpl
    def register_interfaces(register):
        register("mock", MockInterface)


    @hookimpl
    def register_commands(cli):
        @cli.command("hello")
        def hello():
            """Say hello."""
            click.echo("hello")
    '''
)


@pytest.fixture
def clashing_plugin(tmp_path: Path) -> dict[str, str]:
    site = tmp_path / "site"
    site.mkdir()
    (site / "coeval_clash_plugin.py").write_text(CLASH_SOURCE)
    dist = site / "coeval_clash_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: coeval-clash-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[coeval]\nclash = coeval_clash_plugin\n")
    (dist / "RECORD").write_text("")
    env = {**os.environ, "PYTHONPATH": _path_with(site)}
    env.pop("COEVAL_DISABLE_PLUGINS", None)
    return env


@pytest.mark.parametrize(
    "argv", [["plugins"], ["plugins", "--json"], ["run", "--config", "examples/mock_smoke.yaml", "--dry-run"]]
)
@pytest.mark.slow
def test_two_plugins_registering_one_name_is_a_one_line_error(clashing_plugin, argv):
    out = subprocess.run(
        [sys.executable, "-m", "coeval.cli.main", *argv],
        env=clashing_plugin, capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2],
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == [
        "error: plugin conflict: interface 'mock' registered twice: by plugin 'core' and by plugin 'clash' "
        "(uninstall one, or set COEVAL_DISABLE_PLUGINS=clash)"
    ]
    assert "Traceback" not in out.stderr


@pytest.mark.slow
def test_plugins_json_lists_commands_per_plugin(clashing_plugin):
    report = {p["name"]: p for p in _plugins_json({**clashing_plugin, "COEVAL_DISABLE_PLUGINS": "clash"})}
    assert {"run", "status", "plan", "plugins", "describe"} <= set(report["core"]["commands"])
    assert "clash" not in report
    if "analysis" in report:  # coeval-analysis installed
        assert report["analysis"]["commands"] == ["analyze", "export", "label", "view"]
