"""``coeval run`` on the console: honest counts, the spend estimate, quiet/verbose, filters."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from coeval.cli.main import cli

SUMMARY = re.compile(r"^(\w+): (\d+)/(\d+) done(?:, (\d+) cancelled \(([^)]*)\))? \((\d+) ok, (\d+) failed\)", re.M)


def starter(edit: Any = None) -> Path:
    """The mock starter config of ``coeval init``, optionally edited."""
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    path = Path("coeval.yaml")
    if edit is not None:
        doc = yaml.safe_load(path.read_text())
        edit(doc)
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def priced(doc: dict[str, Any]) -> None:
    for model in doc["models"]:
        model["parameters"]["cost_per_call_usd"] = 0.01
    doc["experiment"]["budget_usd"] = 0.05


def test_a_budget_stop_counts_the_items_not_run_as_cancelled_not_done(work: Path, capfd: pytest.CaptureFixture[str]) -> None:
    starter(priced)
    capfd.readouterr()
    result = CliRunner().invoke(cli, ["run", "coeval.yaml"])
    assert result.exit_code == 3, result.output
    err = capfd.readouterr().err + result.output
    lines = SUMMARY.findall(err)
    assert lines, err
    stopped = [line for line in lines if line[3]]
    assert stopped, err  # at least one phase was cut short by the budget
    for phase, done, total, cancelled, cause, ok, failed in stopped:
        assert cause == "budget"
        assert int(done) + int(cancelled) == int(total)
        assert int(done) == int(ok) + int(failed) < int(total)
    assert "0/0" not in err


def test_a_phase_bar_is_hidden_until_its_items_are_counted() -> None:
    import io

    from rich.console import Console

    from coeval.progress import ProgressReporter

    out = io.StringIO()
    reporter = ProgressReporter(enabled=True, console=Console(file=out, force_terminal=True, width=120))
    tracker = reporter.start_phase("evaluation", 0)
    assert reporter._live is not None
    reporter._live.refresh()
    assert "0/0" not in out.getvalue()
    tracker.total = 4
    reporter._live.refresh()
    reporter.close()
    assert "0/4" in out.getvalue()
