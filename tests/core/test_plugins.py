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

    from coeval.hookspecs import hookimpl
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
    env = {**os.environ, "PYTHONPATH": str(site), "MARKER_FILE": str(marker)}
    env.pop("COEVAL_DISABLE_PLUGINS", None)
    return {"env": env, "marker": str(marker)}  # type: ignore[dict-item]


def _plugins_json(env: dict[str, str]) -> list[dict]:
    out = subprocess.run(
        [sys.executable, "-m", "coeval.cli.main", "plugins", "--json"],
        env=env, capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout)


def test_third_party_plugin_is_listed_with_what_it_registered(installed_plugin):
    report = {p["name"]: p for p in _plugins_json(installed_plugin["env"])}
    assert "echo" in report
    assert report["echo"]["distribution"] == "coeval-echo-plugin 1.2.3"
    assert report["echo"]["interfaces"] == ["echo"]
    assert report["echo"]["metrics"] == ["shout_match"]
    assert "mock" in report["core"]["interfaces"]
    assert Path(installed_plugin["marker"]).exists()


def test_disabled_plugin_is_not_imported(installed_plugin):
    env = {**installed_plugin["env"], "COEVAL_DISABLE_PLUGINS": "echo"}
    report = {p["name"] for p in _plugins_json(env)}
    assert "echo" not in report
    assert "core" in report
    assert not Path(installed_plugin["marker"]).exists()


def test_text_listing_names_plugins_and_registrations(installed_plugin):
    out = subprocess.run(
        [sys.executable, "-m", "coeval.cli.main", "plugins"],
        env=installed_plugin["env"], capture_output=True, text=True, check=True,
    ).stdout
    assert "echo  (coeval-echo-plugin 1.2.3)" in out
    assert "interfaces: echo" in out


def test_duplicate_registration_is_an_error():
    from coeval.plugins import DuplicateRegistrationError, Registry

    reg: Registry[int] = Registry("metric")
    reg.add("bleu", 1, "a")
    with pytest.raises(DuplicateRegistrationError, match="'bleu' registered twice"):
        reg.add("bleu", 2, "b")
