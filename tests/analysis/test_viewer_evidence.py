"""The evidence behind a score is visible: a code test's status and error on the datapoint
page and in ``coeval export``; with ``samples: 3`` every answer is labelled "sample k of 3";
export names the judge's word ``level`` and its value ``score``; and the viewer's start page
shows the leaderboard ``coeval analyze`` prints."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli

from tests.analysis.runs import datapoint, evaluation, response, write_run
from tests.analysis.viewer_wait import serve_view

RUBRIC = {"correctness": "does it work"}
ERRORS = {1: "Traceback (most recent call last):\n  File \"<prog>\", line 3\nAssertionError: add(2, 2) != 4",
          2: "  File \"<prog>\", line 2\n    return a+b\nIndentationError: unexpected indent"}  # fmt: skip


def _code_run(root: Path) -> Path:
    """Two code items, two students with three samples each; ``good`` passes every test,
    ``bad`` fails every one (with the sandbox's captured error); a judge grades all High."""
    dps = [datapoint("t", "teach", seq) for seq in (1, 2)]
    answers, evals = [], []
    for dp in dps:
        for student in ("good", "bad"):
            for k in (1, 2, 3):
                rid = f"{dp['id']}__{student}" + (f"__sample{k}" if k > 1 else "")
                answer = response(dp, student, f"def add(a, b): ... # {student} sample {k}", id=rid, sample=k)
                answers.append(answer)
                evals.append(evaluation(answer, "judge-1", {"correctness": "High"}, rationale={"correctness": "ok"}))
                failed = student == "bad"
                run = {"status": "failed" if failed else "passed", "error": ERRORS[int(dp["id"][-1])] if failed else None,
                       "duration_s": 0.12, "network_isolated": True}  # fmt: skip
                evals.append(evaluation(answer, "python_tests", {"pass@1": 0.0 if failed else 1.0},
                                        evaluator="python_tests", execution=run))  # fmt: skip
    return write_run(root, rubric=RUBRIC, datapoints=dps, responses=answers, evaluations=evals)


def _export(run: Path, out: Path, cache: Path) -> list[dict[str, str]]:
    result = CliRunner().invoke(cli, ["export", "--run", str(run), "--format", "csv", "--out", str(out)],
                                env={"COEVAL_VIEW_CACHE": str(cache)})  # fmt: skip
    assert result.exit_code == 0, result.output
    with out.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def test_export_has_each_tests_status_and_error_and_labelled_samples(tmp_path: Path) -> None:
    rows = _export(_code_run(tmp_path / "run"), tmp_path / "j.csv", tmp_path / "cache")
    tests = [r for r in rows if r["judge"] == "python_tests"]
    assert len(tests) == 12
    failed = [r for r in tests if r["student"] == "bad"]
    assert {r["test_status"] for r in failed} == {"failed"}
    assert {r["test_error"].splitlines()[-1] for r in failed} == {"AssertionError: add(2, 2) != 4",
                                                                  "IndentationError: unexpected indent"}
    assert {(r["test_status"], r["test_error"]) for r in tests if r["student"] == "good"} == {("passed", "")}
    assert {(r["sample"], r["samples"]) for r in rows} == {("1", "3"), ("2", "3"), ("3", "3")}
    sample2 = next(r for r in tests if r["response_id"].endswith("__bad__sample2"))
    assert sample2["sample"] == "2"
    # the judge's word is the level, its value the score; a test has a score and no level
    judged = next(r for r in rows if r["judge"] == "judge-1")
    assert (judged["level"], judged["score"]) == ("High", "1.0")
    assert (failed[0]["level"], failed[0]["score"]) == ("", "0.0")
    assert "value" not in rows[0] and "error" in rows[0]


@pytest.mark.slow
def test_export_writes_the_leaderboard_analyze_prints(reference_run: Path, tmp_path: Path) -> None:
    from coeval_analysis.leaderboard import leaderboard

    run = tmp_path / "ref"
    shutil.copytree(reference_run, run)
    result = CliRunner().invoke(cli, ["analyze", "--run", str(run), "-q", "--report", "summary"])
    assert result.exit_code == 0, result.output
    board = leaderboard(json.loads((run / "analysis" / "summary.json").read_text()))
    _export(run, tmp_path / "j.csv", tmp_path / "cache")
    with (tmp_path / "j.leaderboard.csv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["rank_range", "student", "headline", "ci_low", "ci_high",
                             *(c["key"] for c in board["columns"])]  # fmt: skip
    assert [(r["rank_range"], r["student"], float(r["headline"]), float(r["ci_low"])) for r in rows] == [
        (b["rank_label"], b["student"], round(b["headline"], 3), round(b["headline_ci"][0], 3)) for b in board["rows"]
    ]
    assert all(len(r["ci_low"].split(".")[-1]) <= 3 for r in rows)  # rounded as printed


@pytest.mark.slow
@pytest.mark.browser
def test_a_failed_tests_error_is_on_its_datapoint_page_and_samples_are_labelled(tmp_path: Path, page: Any) -> None:
    run = _code_run(tmp_path / "run")
    env = {**os.environ, "COEVAL_VIEW_CACHE": str(tmp_path / "cache")}
    for url in serve_view(["--run", str(run)], env, tmp_path):
        page.goto(url + "/r/0/datapoint/t__teach__00001")
        cards = page.locator(".card.judgment")
        tests = [cards.nth(i) for i in range(cards.count()) if cards.nth(i).locator("h3").inner_text().startswith(
            "python_tests on bad")]  # fmt: skip
        assert [c.locator("h3").inner_text() for c in tests] == [
            f"python_tests on bad · sample {k} of 3" for k in (1, 2, 3)]
        assert all(c.locator(".test-status").inner_text() == "failed" for c in tests)
        assert tests[0].locator("pre.test-error").inner_text() == ERRORS[1]
        assert "(not recorded)" not in tests[0].inner_text()
        answers = page.locator(".card.answer h3").all_inner_texts()
        assert answers[:3] == [f"bad · sample {k} of 3" for k in (1, 2, 3)]
        # the matrix cell of a student shows every sample, labelled, with its judgments
        page.goto(url + "/r/0/matrix")
        page.locator('#matrix td.cell[data-student="bad"]').first.click()
        page.locator(".answer-detail").wait_for()
        heads = page.locator(".answer-detail h4.sample-head").all_inner_texts()
        assert heads == [f"bad · sample {k} of 3" for k in (1, 2, 3)]
        assert page.locator(".answer-detail pre.test-error").count() == 3
        break


@pytest.mark.slow
@pytest.mark.browser
def test_the_start_page_leaderboard_is_the_one_analyze_prints(reference_run: Path, tmp_path: Path,
                                                              page: Any) -> None:
    run = tmp_path / "ref"
    shutil.copytree(reference_run, run)
    env = {**os.environ, "COLUMNS": "100", "COEVAL_VIEW_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "coeval.cli.main", "analyze", "--run", str(run)], env=env,
                          capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("─"))
    header = lines[top - 1].split()
    console = [line.split() for line in lines[top + 1:top + 6]]
    for url in serve_view(["--run", str(run)], env, tmp_path):
        page.goto(url + "/")
        heads = page.locator("table#leaderboard th").all_inner_texts()
        shown = [" ".join(r.locator("td").all_inner_texts()).split() for r in page.locator("table#leaderboard tr").all()[1:]]
        assert " ".join(heads).split() == header
        assert shown == console  # same students, same order, same numbers
        assert len(shown) == 5
        tiers = " ".join(page.locator("#tiers").inner_text().split())
        assert tiers.removeprefix("Tiers: ") in " ".join(done.stdout.split())
        assert page.locator("table#ranking").count() == 0  # no second table that disagrees
        break
