"""Warnings on the console are plain sentences; structlog's ``[warning ] ... key=value`` lines
and raw event dicts stay in ``run.log``."""

from __future__ import annotations

import io
import json
import logging
import re
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval.console.logs import run_logging

#: A structlog console line (``[warning  ]``), a ``key=value`` field, or a printed event dict.
STRUCTLOG_LINE = re.compile(r"\[\s*(?:debug|info|warning|error|critical)\s*\]|\b[a-z_]+=\S|\{'event':|'level':", re.I)


def test_a_budget_stop_prints_no_structlog_line_and_run_log_keeps_the_fields(
    work: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    doc = yaml.safe_load(Path("coeval.yaml").read_text())
    for model in doc["models"]:
        model["parameters"]["cost_per_call_usd"] = 0.01
    doc["experiment"]["budget_usd"] = 0.05
    Path("coeval.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    capfd.readouterr()
    result = CliRunner().invoke(cli, ["run", "coeval.yaml"])
    assert result.exit_code == 3, result.output
    err = capfd.readouterr().err + result.output
    assert "data_generation: 5/10 done, 5 cancelled (budget) (5 ok, 0 failed)" in err
    assert "budget reached" not in err  # the summary line says it
    assert not [line for line in err.splitlines() if STRUCTLOG_LINE.search(line)], err
    events = [json.loads(line) for line in Path("runs/starter-mock/run.log").read_text().splitlines()]
    budget = [e for e in events if e["event"] == "budget reached: items left for --continue"]
    assert [(e["phase"], e["items"]) for e in budget] == [("data_generation", 5), ("response_collection", 10)]


def test_a_warning_is_one_plain_sentence_with_its_useful_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    with run_logging(None, level="INFO", console_level="WARNING", experiment="demo") as log:
        log.info("run started")  # below the console's level
        log.warning("cut a partial last line (a crash interrupted its write)", phase="evaluation",
                    file="phase5/t.jsonl", bytes=12, counts={"a": 1}, empty=None)
        logging.getLogger("coeval.scheduler").warning("a server stopped answering")
    assert err.getvalue().splitlines() == [
        "coeval: warning: evaluation: cut a partial last line (a crash interrupted its write) "
        "(file phase5/t.jsonl, bytes 12, counts {a: 1})",
        "coeval: warning: a server stopped answering",
    ]


def test_verbose_still_shows_every_field(monkeypatch: pytest.MonkeyPatch) -> None:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    with run_logging(None, level="DEBUG") as log:
        log.warning("batch poll failed", job="batch_1")
    assert "[warning  ] batch poll failed" in err.getvalue() and "job=batch_1" in err.getvalue()
