"""``coeval label --import / --export``: a CSV import changes the next analysis exactly as
the same labels given in the viewer do; a bad row exits 2 and writes nothing; an export
lists the suggested answers with what a labeller needs."""

from __future__ import annotations

import csv
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval_analysis import analyze, load_run
from coeval_analysis.analysis import AnalysisOptions
from coeval_analysis.labels.human_labels import LABELS_FILE, current_answers
from coeval_analysis.viewer.labelling import LabelDesk

LEVEL = {"stu-a": "High", "stu-b": "High", "stu-c": "Medium", "stu-d": "Low", "stu-e": "Low"}


class _Store:
    def __init__(self, run: Path) -> None:
        self.run = run


def _units(run: Path, n: int) -> list[tuple[str, str]]:
    return sorted(k for k, a in current_answers(run).items() if a.task == "task-1")[:n]


def _write_csv(path: Path, rows: list[list[str]], header: tuple[str, ...] = ("datapoint_id", "student", "factor",
                                                                              "level", "labeler")) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def _comparable(summary: dict[str, Any]) -> dict[str, Any]:
    out = dict(summary)
    out.pop("generated_at"), out.pop("run")
    return out


def _headline(summary: dict[str, Any]) -> dict[str, Any]:
    """The conflict-aware headline (``robust_*``: the measurement model) and its judge scales."""
    students = summary["students"]
    return {
        "scores": {s: v["robust_score"] for s, v in students.items()},
        "ranks": {s: v["robust_rank"] for s, v in students.items()},
        "rank_ranges": {s: v["rank_range"] for s, v in students.items()},
        "reference_scale": {j: v["scale"] for j, v in summary["judges"].items()},
    }


@pytest.mark.slow
def test_csv_import_changes_the_analysis_as_viewer_labels_do(make_run: Callable[..., Path], tmp_path: Path) -> None:
    by_csv = make_run("csv", datapoints_per_teacher=4)
    by_view = tmp_path / "view"
    shutil.copytree(by_csv, by_view)
    units = _units(by_csv, 30)
    rows = [[dp, st, f, LEVEL[st], "ana"] for dp, st in units for f in ("accuracy", "clarity", "depth")]
    result = CliRunner().invoke(cli, ["label", "--run", str(by_csv), "--import", str(_write_csv(tmp_path / "l.csv", rows))])
    assert result.exit_code == 0, result.output
    assert "90 label(s)" in result.output
    desk = LabelDesk("ana", [_Store(by_view)])  # type: ignore[list-item]
    for dp, st in units:
        status, reply = desk.post(0, {"datapoint_id": dp, "student": st,
                                      "levels": {f: LEVEL[st] for f in ("accuracy", "clarity", "depth")}})
        assert status == 200, reply
    before = analyze(load_run(by_view), AnalysisOptions(n_boot=100), human_labels=[]).summary
    a = analyze(load_run(by_csv), AnalysisOptions(n_boot=100)).summary
    b = analyze(load_run(by_view), AnalysisOptions(n_boot=100)).summary
    assert a["reference"]["n_labels"] == 90 and a["reference"]["human_ranking"] is not None
    assert _comparable(a) == _comparable(b)
    assert _comparable(a) != _comparable(before)
    # the labels are the headline's reference judge: they move its scores, and both ways alike
    assert _headline(a) == _headline(b)
    assert _headline(a)["scores"] != _headline(before)["scores"]
    # and so does the next `coeval analyze`
    for run in (by_csv, by_view):
        result = CliRunner().invoke(cli, ["analyze", "--run", str(run), "--out", str(run / "out"), "--bootstrap", "100"])
        assert result.exit_code == 0, result.output
    by_cli = [_headline(json.loads((run / "out" / "summary.json").read_text())) for run in (by_csv, by_view)]
    assert by_cli[0] == by_cli[1]
    assert by_cli[0]["ranks"] == _headline(a)["ranks"] and by_cli[0]["rank_ranges"] == _headline(a)["rank_ranges"]
    assert by_cli[0]["scores"] == pytest.approx(_headline(a)["scores"], abs=1e-5)  # summary.json rounds
    strip = [{k: v for k, v in json.loads(x).items() if k != "labelled_at"}
             for x in (by_csv / LABELS_FILE).read_text().splitlines()]  # fmt: skip
    strip_v = [{k: v for k, v in json.loads(x).items() if k != "labelled_at"}
               for x in (by_view / LABELS_FILE).read_text().splitlines()]  # fmt: skip
    assert strip == strip_v


def test_a_bad_row_exits_2_and_writes_nothing(make_run: Callable[..., Path], tmp_path: Path) -> None:
    run = make_run(datapoints_per_teacher=2)
    (dp, st), (dp2, st2) = _units(run, 2)
    good = [dp, st, "accuracy", "High", "ana"]
    cases = {
        "factor 'acuracy' is not a rubric factor of task task-1; allowed: accuracy, clarity, depth":
            [dp2, st2, "acuracy", "Low", "ana"],
        "level 'Great' is not a level; allowed: Low, Medium, High": [dp2, st2, "accuracy", "Great", "ana"],
        "student 'stu-z' has no answer to " + dp2 + "; allowed: stu-a, stu-b, stu-c, stu-d, stu-e":
            [dp2, "stu-z", "accuracy", "Low", "ana"],
        "datapoint_id 'nope' is not a datapoint of this run": ["nope", st2, "accuracy", "Low", "ana"],
    }  # fmt: skip
    for message, bad in cases.items():
        path = _write_csv(tmp_path / "bad.csv", [good, bad])
        result = CliRunner().invoke(cli, ["label", "--run", str(run), "--import", str(path)])
        assert result.exit_code == 2, result.output
        assert f"{path} line 3: {message}" in result.output
        assert "Nothing was written." in result.output and "Traceback" not in result.output
        assert not (run / LABELS_FILE).exists()
    path = _write_csv(tmp_path / "nolabeler.csv", [[dp, st, "accuracy", "High"]], ("datapoint_id", "student", "factor",
                                                                                  "level"))  # fmt: skip
    result = CliRunner().invoke(cli, ["label", "--run", str(run), "--import", str(path)])
    assert result.exit_code == 2 and "line 2: no labeler" in result.output
    result = CliRunner().invoke(cli, ["label", "--run", str(run), "--import", str(path), "--labeler", "bo"])
    assert result.exit_code == 0 and json.loads((run / LABELS_FILE).read_text())["labeler"] == "bo"


def test_export_writes_suggested_units_to_fill_in(make_run: Callable[..., Path], tmp_path: Path) -> None:
    run = make_run(datapoints_per_teacher=2)
    out = tmp_path / "next.csv"
    result = CliRunner().invoke(cli, ["label", "--run", str(run), "--export", str(out), "-n", "4", "--labeler", "ana"])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(out.open()))
    assert list(rows[0]) == ["datapoint_id", "student", "factor", "level", "labeler", "task", "response_id", "prompt",
                             "answer", "reference"]  # fmt: skip
    answers = {(r["datapoint_id"], r["student"]) for r in rows}
    assert len(answers) == 4 and all(r["prompt"] and r["answer"] and r["reference"] for r in rows)
    assert {r["level"] for r in rows} == {""} and {r["labeler"] for r in rows} == {"ana"}
    for r in rows:  # filled in, the export imports back
        r["level"] = "Medium"
    filled = tmp_path / "filled.csv"
    with filled.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    result = CliRunner().invoke(cli, ["label", "--run", str(run), "--import", str(filled)])
    assert result.exit_code == 0, result.output
    assert len((run / LABELS_FILE).read_text().splitlines()) == len(rows)
