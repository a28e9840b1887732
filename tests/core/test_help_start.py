"""``coeval --help`` names a first step that works without a checkout (the wheels ship no
``examples/``): the two commands it quotes, run as written, complete a run."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from click.testing import CliRunner
from coeval.cli.main import cli


def test_the_first_steps_in_the_top_level_help_work_in_an_empty_folder(work: Path) -> None:
    shown = CliRunner().invoke(cli, ["--help"])
    assert shown.exit_code == 0
    start = " ".join(shown.output.split("Start with", 1)[1].split("Options:", 1)[0].split())
    steps = re.findall(r"`coeval ([^`]+)`", start)
    assert steps == ["init", "run coeval.yaml"]
    for step in steps:
        result = CliRunner().invoke(cli, shlex.split(step))
        assert result.exit_code == 0, (step, result.output)
    assert (work / "runs" / "starter-mock" / "meta.json").is_file()
