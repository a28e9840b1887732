"""Every Python example of docs/python-api.md runs as written, in order, in an empty folder
holding the starter config as ``experiment.yaml``."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli

API_DOC = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"


def test_the_python_api_examples_run_in_order(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert CliRunner().invoke(cli, ["init", "-q"]).exit_code == 0
    shutil.move("coeval.yaml", "experiment.yaml")
    blocks = re.findall(r"```python\n(.*?)```", API_DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 4  # load, build in Python, plan, run
    namespace: dict[str, Any] = {}
    for block in blocks:
        exec(compile(block, str(API_DOC), "exec"), namespace)
    shown = capsys.readouterr().out
    # the plan of the in-memory config: 5 datapoints, 5 answers, 5 judgments
    assert "15 {'attribute_mapping': 0, 'rubric_mapping': 0, 'data_generation': 5, " in shown
    assert "completed 0 runs/embedded-demo" in shown
    assert (work / "runs" / "embedded-demo" / "meta.json").is_file()
    assert namespace["result"].counts()["evaluation"] == {"written": 5, "failed": 0, "skipped": 0, "calls": 5}
