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
    for _phase, done, total, cancelled, cause, ok, failed in stopped:
        assert cause == "budget"
        assert int(done) + int(cancelled) == int(total)
        assert int(done) == int(ok) + int(failed) < int(total)
    assert "0/0" not in err


def test_a_stopped_phase_is_told_by_its_summary_line_not_by_a_raw_log_line(
    work: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    starter(priced)
    capfd.readouterr()
    result = CliRunner().invoke(cli, ["run", "coeval.yaml"])
    assert result.exit_code == 3, result.output
    err = capfd.readouterr().err + result.output
    assert SUMMARY.search(err), err
    assert "phase finished" not in err  # the summary line says it; run.log keeps the fields
    run_log = next(Path("runs").glob("*/run.log")).read_text()
    assert '"event": "phase finished"' in run_log and '"left_by_cause": {"budget":' in run_log


def test_a_phase_bar_is_hidden_until_its_items_are_counted() -> None:
    import io

    from coeval.console.progress import ProgressReporter
    from rich.console import Console

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


def expensive(doc: dict[str, Any]) -> None:
    for model in doc["models"]:
        model["parameters"]["cost_per_1k_tokens_usd"] = 1.0  # about $50 by the estimate


def test_run_prints_the_estimate_first_and_the_next_step_last(work: Path) -> None:
    starter()
    result = CliRunner().invoke(cli, ["run", "coeval.yaml"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("estimate for this run: 70 calls, ")
    assert "$0.00" in lines[0]
    assert lines[-1] == f"next: coeval analyze --run {Path('runs') / 'starter-mock'}"


def test_above_confirm_above_without_a_terminal_refuses_unless_yes(work: Path) -> None:
    starter(expensive)
    refused = CliRunner().invoke(cli, ["run", "coeval.yaml"])
    assert refused.exit_code == 4, refused.output
    error = [line for line in refused.output.splitlines() if line.startswith("error:")]
    assert len(error) == 1
    assert error[0].startswith("error: the estimate ($") and "above --confirm-above $5.00" in error[0]
    assert "pass --yes to spend" in error[0]
    assert not Path("runs").exists()
    lowered = CliRunner().invoke(cli, ["run", "coeval.yaml", "--confirm-above", "1"])
    assert lowered.exit_code == 4 and "above --confirm-above $1.00" in lowered.output
    agreed = CliRunner().invoke(cli, ["run", "coeval.yaml", "--yes"])
    assert agreed.exit_code == 0, agreed.output
    assert Path("runs/starter-mock/meta.json").is_file()


def test_on_a_terminal_no_stops_before_any_file_and_yes_skips_the_question(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import coeval.cli.spend_check as spend_check

    monkeypatch.setattr(spend_check, "stdin_is_terminal", lambda: True)
    starter(expensive)
    declined = CliRunner().invoke(cli, ["run", "coeval.yaml"], input="n\n")
    assert declined.exit_code == 1, declined.output
    assert "Spend about $" in declined.output and "nothing was run" in declined.output
    assert not Path("runs").exists()
    raised = CliRunner().invoke(cli, ["run", "coeval.yaml", "--confirm-above", "1000"])
    assert raised.exit_code == 0 and "Spend about" not in raised.output
    again = CliRunner().invoke(cli, ["run", "coeval.yaml", "--continue", "--yes"])
    assert again.exit_code == 0 and "Spend about" not in again.output
    assert "estimate for remaining work: 0 calls" in again.output


def test_quiet_run_prints_only_the_outcome_and_verbose_shows_info_events(work: Path) -> None:
    starter()
    quiet = CliRunner().invoke(cli, ["run", "coeval.yaml", "-q"])
    assert quiet.exit_code == 0, quiet.output
    assert quiet.output.splitlines() == [f"coeval: run completed ({Path('runs') / 'starter-mock'}), exit code 0"]
    verbose = CliRunner().invoke(cli, ["run", "coeval.yaml", "--continue", "--verbose"])
    assert verbose.exit_code == 0, verbose.output
    assert "[info     ] run started" in verbose.output
    assert "[info     ]" not in CliRunner().invoke(cli, ["run", "coeval.yaml", "--continue"]).output


@pytest.mark.parametrize("command", ["run", "status", "analyze"])
def test_quiet_and_verbose_together_is_a_usage_error(work: Path, command: str) -> None:
    starter()
    args = ["coeval.yaml"] if command == "run" else ["--config", "coeval.yaml"]
    result = CliRunner().invoke(cli, [command, *args, "-q", "-v"])
    assert result.exit_code == 2
    assert "-q/--quiet and -v/--verbose cannot be used together" in result.output


@pytest.mark.slow
def test_quiet_status_is_one_line(work: Path) -> None:
    starter()
    assert CliRunner().invoke(cli, ["run", "coeval.yaml", "-q"]).exit_code == 0
    result = CliRunner().invoke(cli, ["status", "--config", "coeval.yaml", "-q"])
    assert result.exit_code == 0, result.output
    assert result.output == f"{Path('runs') / 'starter-mock'}: completed\n"
    verbose = CliRunner().invoke(cli, ["analyze", "--config", "coeval.yaml", "-v", "--bootstrap", "0"])
    assert verbose.exit_code == 0, verbose.output


def two_tasks(doc: dict[str, Any]) -> None:
    doc["tasks"].append({**doc["tasks"][0], "name": "second"})


def written(output: str) -> dict[str, int]:
    import json

    return {phase: counts["written"] for phase, counts in json.loads(output)["phases"].items()}


def test_tasks_and_models_run_a_subset_and_continue_fills_the_rest(work: Path) -> None:
    starter(two_tasks)
    runner = CliRunner()
    first = runner.invoke(cli, ["run", "coeval.yaml", "--tasks", "second", "--models", "mock-a", "-q", "--json"])
    assert first.exit_code == 0, first.output
    counts = written(first.stdout)
    # one task, one teacher (5 datapoints), one student, one judge
    assert (counts["data_generation"], counts["response_collection"], counts["evaluation"]) == (5, 5, 5)
    rest = runner.invoke(cli, ["run", "coeval.yaml", "--continue", "-q", "--json"])
    assert rest.exit_code == 0, rest.output
    counts = written(rest.stdout)
    # the full run is 20 datapoints, 40 answers, 80 grades; nothing is made twice
    assert (counts["data_generation"], counts["response_collection"], counts["evaluation"]) == (15, 35, 75)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tasks", "short_answr"], "V-36 --tasks: 'short_answr' is not a task of this config (did you mean 'short_answer'?)"),
        (["--models", "mock-A"], "V-36 --models: 'mock-A' is not a model of this config (did you mean 'mock-a'?)"),
    ],
)
def test_unknown_task_or_model_names_exit_2_with_a_did_you_mean(work: Path, args: list[str], message: str) -> None:
    starter()
    result = CliRunner().invoke(cli, ["run", "coeval.yaml", *args])
    assert result.exit_code == 2
    assert message in result.output
    assert not Path("runs").exists()


def test_models_without_a_judge_exit_2_naming_the_role(work: Path) -> None:
    def roles(doc: dict[str, Any]) -> None:
        doc["models"][0]["roles"] = ["teacher", "student"]

    starter(roles)
    result = CliRunner().invoke(cli, ["run", "coeval.yaml", "--models", "mock-a"])
    assert result.exit_code == 2
    assert "the models chosen include no judge" in result.output and "add one of: mock-b" in result.output


def test_a_filtered_run_keeps_the_drift_protection_of_the_models_it_left_out(work: Path) -> None:
    starter()
    runner = CliRunner()
    assert runner.invoke(cli, ["run", "coeval.yaml", "-q"]).exit_code == 0
    assert runner.invoke(cli, ["run", "coeval.yaml", "--continue", "--models", "mock-a", "-q"]).exit_code == 0
    doc = yaml.safe_load(Path("coeval.yaml").read_text())
    doc["models"][1]["parameters"]["seed"] = 7
    Path("coeval.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    result = runner.invoke(cli, ["run", "coeval.yaml", "--continue"])
    assert result.exit_code == 2, result.output
    assert "mock-b" in result.output and "seed" in result.output
