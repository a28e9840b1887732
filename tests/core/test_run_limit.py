"""``coeval run --limit N``: a small slice first, then extend the same run without redoing it."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from click.testing import CliRunner
from coeval.cli.main import cli

RUN = Path("runs") / "starter-mock"


def _records(phase: str) -> list[dict[str, object]]:
    return [json.loads(line) for path in sorted((RUN / phase).glob("*.jsonl")) for line in path.read_text().splitlines()]


def _per_teacher(phase: str) -> dict[object, int]:
    return dict(Counter(r["teacher_model_id"] for r in _records(phase)))


def test_limit_then_larger_limit_extends_without_repeating(work: Path) -> None:
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0  # mock template: total 5 per teacher

    first = CliRunner().invoke(cli, ["run", "coeval.yaml", "--limit", "2"])
    assert first.exit_code == 0, first.output
    assert _per_teacher("phase3_datapoints") == {"mock-a": 2, "mock-b": 2}
    assert len(_records("phase4_responses")) == 8  # 4 items x 2 students
    assert len(_records("phase5_evaluations")) == 16  # 8 answers x 2 judges
    before = {phase: _records(phase) for phase in ("phase3_datapoints", "phase4_responses", "phase5_evaluations")}

    again = CliRunner().invoke(cli, ["run", "coeval.yaml", "--limit", "5", "--continue"])
    assert again.exit_code == 0, again.output
    assert _per_teacher("phase3_datapoints") == {"mock-a": 5, "mock-b": 5}
    assert "data_generation: 6/6 done" in again.output  # only the 3 missing items per teacher
    for phase, old in before.items():
        now = _records(phase)
        ids = [r["id"] for r in now]
        assert len(ids) == len(set(ids)), f"{phase} repeats a record"
        assert all(record in now for record in old), f"{phase} lost or rewrote a record"
    assert (len(_records("phase4_responses")), len(_records("phase5_evaluations"))) == (20, 40)


def test_limit_above_total_changes_nothing_and_dry_run_shows_the_slice(work: Path) -> None:
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    sliced = CliRunner().invoke(cli, ["run", "coeval.yaml", "--limit", "1", "--dry-run"])
    assert sliced.exit_code == 0, sliced.output
    assert "short_answer              0          0              2             4               8      14" in sliced.output
    whole = CliRunner().invoke(cli, ["run", "coeval.yaml", "--limit", "50"])
    assert whole.exit_code == 0, whole.output
    assert _per_teacher("phase3_datapoints") == {"mock-a": 5, "mock-b": 5}


def test_limit_below_one_is_a_usage_error(work: Path) -> None:
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    result = CliRunner().invoke(cli, ["run", "coeval.yaml", "--limit", "0"])
    assert result.exit_code == 2
    assert "--limit" in result.output
    assert not RUN.exists()


def test_run_json_reports_the_limit_until_a_whole_run_completes(work: Path) -> None:
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0  # mock template: total 5 per teacher
    sliced = CliRunner().invoke(cli, ["run", "coeval.yaml", "--limit", "2", "--json", "-q"])
    assert sliced.exit_code == 0, sliced.output
    assert json.loads(sliced.stdout)["limit"] == {"datapoints_per_task_teacher": 2, "full_totals": {"short_answer": 5}}
    whole = CliRunner().invoke(cli, ["run", "coeval.yaml", "--continue", "--json", "-q"])
    assert whole.exit_code == 0, whole.output
    assert json.loads(whole.stdout)["limit"] is None
