"""The headline ranking on run folders: conflicts, warnings, comparisons, missing data,
in summary.json, the console and the report."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli

STUDENTS = {"stu-a": 0.75, "stu-b": 0.67, "judge-1": 0.59, "stu-d": 0.51, "stu-e": 0.43}


def _run_cli(run: Path, *extra: str) -> tuple[dict, str, str]:
    out = run.parent / f"{run.name}-out"
    result = CliRunner().invoke(
        cli, ["analyze", "--run", str(run), "--out", str(out), "--bootstrap", "200", *extra]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    return summary, result.output, (out / "report.html").read_text()


@pytest.mark.slow
def test_self_preferring_judge_is_left_out_and_reported(make_run: Callable[..., Path]) -> None:
    run = make_run(
        students=STUDENTS,
        judges={"judge-1": 0.08, "judge-2": 0.1, "judge-3": 0.12},
        random_judges=(),
        self_bias={"judge-1": 0.3},
        datapoints_per_teacher=20,
        seed=4,
    )
    s, output, page = _run_cli(run)
    # judge-1 scores its own answers (one student, every datapoint, 2 tasks x 3 teachers x 20)
    assert s["judges"]["judge-1"]["n_conflicted"] == 120
    assert s["robust"]["converged"] is True and s["robust"]["iterations"] >= 1
    kinds = {(w["kind"], w["subject"]) for w in s["warnings"]}
    assert ("self_preference", "judge-1") in kinds
    # the headline puts judge-1 back in its true place; the plain mean lifts it
    order = sorted(s["students"], key=lambda x: s["students"][x]["robust_rank"])
    assert order == list(STUDENTS)
    assert s["students"]["judge-1"]["rank"] < 3
    assert s["students"]["judge-1"]["robust_unadjusted_score"] is not None
    # every pair compared once, best first; rank ranges printed
    assert len(s["comparisons"]) == 10
    assert {"a", "b", "diff", "ci", "p"} == set(s["comparisons"][0])
    assert "warning: judge judge-1 scores its own answers higher than unrelated judges do" in " ".join(output.split())
    assert page.index('id="ranking"') < page.index('id="comparisons"') < page.index('id="warnings"')
    assert '"fig-comparisons"' in page


@pytest.mark.slow
def test_uneven_missing_answers_warn_and_add_a_common_items_ranking(make_run: Callable[..., Path]) -> None:
    run = make_run(students=STUDENTS, datapoints_per_teacher=12, seed=5)
    # every judge record of stu-e's answers to odd datapoints fails
    for path in (run / "phase5_evaluations").glob("*.jsonl"):
        lines = []
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            if rec["student_model_id"] == "stu-e" and int(rec["datapoint_id"][-5:]) % 2:
                rec.update(scores={}, status="failed", error="parse_error: no JSON object")
            lines.append(json.dumps(rec))
        path.write_text("\n".join(lines) + "\n")
    s, _output, page = _run_cli(run)
    stu_e = s["students"]["stu-e"]
    assert (stu_e["n_answers"], stu_e["n_failed"], stu_e["n_unjudged"]) == (72, 0, 36)
    assert stu_e["missing_rate"] == 0.5
    assert s["students"]["stu-a"]["missing_rate"] == 0.0
    assert any(w["kind"] == "missing_data" and w["subject"] == "stu-e" for w in s["warnings"])
    assert s["common_items"]["n_items"] == 36
    assert set(s["common_items"]["students"]) == set(STUDENTS)
    assert 'id="missing"' in page and "every student has a score on" in page


@pytest.mark.slow
def test_common_items_only_on_request_when_nothing_is_missing(make_run: Callable[..., Path]) -> None:
    run = make_run(students=STUDENTS, datapoints_per_teacher=5, seed=6)
    s, _, _ = _run_cli(run)
    assert s["common_items"] is None
    s, _, _ = _run_cli(run, "--common-items")
    assert s["common_items"]["n_items"] == 30
    # 30 datapoints: fine; the per-student warning for thin intervals stays quiet
    assert not any(w["kind"] == "few_datapoints" for w in s["warnings"])


def test_one_level_judge_and_few_datapoints_are_warned(make_run: Callable[..., Path]) -> None:
    run = make_run(
        students=STUDENTS,
        judges={"j-1": 0.08, "j-2": 0.1, "j-high": 0.1},
        leniency={"j-high": 1.0},  # sees every answer as High
        random_judges=(),
        datapoints_per_teacher=3,
        seed=7,
    )
    s, output, _ = _run_cli(run)
    kinds = {(w["kind"], w["subject"]) for w in s["warnings"]}
    assert kinds == {("one_level", "j-high"), ("flat_judge", "j-high"), ("few_datapoints", None)}
    # one_level and flat_judge of one judge: one console line, the first message under -v and in the report
    assert "warning: judge j-high barely tells answers apart" in output
    assert "18 datapoints" in output


def test_students_with_no_judge_outside_their_family_keep_their_judges_and_a_wider_interval(
    make_run: Callable[..., Path],
) -> None:
    """Every judge is of the students' family: the headline keeps their scores, with the
    family-bias prior's spread in the intervals; the bias is common to both students, so
    their difference is still measured."""
    students = {"stu-a": 0.75, "stu-b": 0.5}
    judges = {"judge-1": 0.08, "judge-2": 0.1}
    run = make_run(
        students=students, judges=judges, random_judges=(), datapoints_per_teacher=10, seed=3,
        families=dict.fromkeys([*students, *judges], "one-maker"),
    )
    s, output, _ = _run_cli(run)
    for name in students:
        entry = s["students"][name]
        assert entry["score"] is not None and entry["robust_score"] is not None
        width = entry["robust_ci"][1] - entry["robust_ci"][0]
        assert width > 2 * (entry["ci"][1] - entry["ci"][0])  # the prior's spread is in it
    (pair,) = s["comparisons"]
    assert (pair["a"], pair["b"]) == ("stu-a", "stu-b") and pair["ci"][0] > 0
    assert "No usable score" not in output
