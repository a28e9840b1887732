"""``coeval plan``, ``describe`` and ``probe`` take the config as CONFIG, as ``coeval run`` does."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from coeval.cli.main import cli


def _coeval(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_plan_takes_the_config_as_an_argument_or_option_alike(work: Path) -> None:
    assert _coeval("init", "-q")[0] == 0
    code, shown = _coeval("plan", "coeval.yaml", "--estimate-samples", "0", "--json")
    assert code == 0, shown
    assert json.loads(shown)["total_calls"] == 70  # 10 datapoints, 20 answers, 40 judgments
    code, same = _coeval("plan", "--config", "coeval.yaml", "--estimate-samples", "0", "--json")
    assert code == 0 and json.loads(same)["total_calls"] == 70


def test_plan_without_a_config_or_with_two_is_a_clear_error(work: Path) -> None:
    code, shown = _coeval("plan")
    assert code == 2
    assert shown == ("error: no config given\n"
                     "    fix: coeval plan CONFIG (or --config CONFIG); `coeval init` writes a starter one\n")
    code, shown = _coeval("plan", "a.yaml", "--config", "b.yaml")
    assert code == 2 and shown.startswith("error: two configs given: a.yaml and --config b.yaml\n")


def test_describe_takes_the_config_as_an_argument(work: Path) -> None:
    assert _coeval("init", "-q")[0] == 0
    code, shown = _coeval("describe", "coeval.yaml")
    assert code == 0, shown
    assert shown == "wrote coeval_description.html\n"
    assert "starter-mock" in (work / "coeval_description.html").read_text(encoding="utf-8")


def test_probe_takes_the_config_as_an_argument(work: Path) -> None:
    assert _coeval("init", "-q")[0] == 0
    code, shown = _coeval("probe", "coeval.yaml")
    assert code == 0, shown
    assert shown.splitlines()[-1] == "2 of 2 probed model(s) answered"
