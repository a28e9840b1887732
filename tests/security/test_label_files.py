"""``coeval label``: its CSV export hands a spreadsheet no formula and is private (0600);
its import reads what spreadsheets write (a byte-order mark, UTF-16 with one) and refuses
anything else in one line; ids from the CSV are echoed without control characters; the
label lock is private too."""

from __future__ import annotations

import csv
import json
import stat
from pathlib import Path

import pytest
from coeval_analysis.labels.human_labels import LABELS_FILE, current_answers
from coeval_testing.synthetic import SyntheticSpec, write_synthetic_run

from tests.robustness._support import invoke, no_traceback

FORMULAS = ['=HYPERLINK("https://evil.example","click")', "+cmd|' /C calc'!A0", "@SUM(1)", "-2+3+cmd|x",
            "\t=1+1", "\r=1+1"]
DANGEROUS = ("=", "+", "-", "@", "\t", "\r")
HEADER = "datapoint_id,student,factor,level,labeler\n"


def _rewrite(path: Path, change: dict[str, str]) -> None:
    lines = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        rec = json.loads(line)
        rec.update({k: FORMULAS[(i + j) % len(FORMULAS)] for j, k in enumerate(change)})
        lines.append(json.dumps(rec))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def hostile_run(tmp_path: Path) -> Path:
    """A run whose prompts, references and answers are all formulas."""
    run = write_synthetic_run(tmp_path / "run", SyntheticSpec(datapoints_per_teacher=2))
    for path in (run / "phase3_datapoints").glob("*.jsonl"):
        _rewrite(path, {"prompt": "", "reference_response": ""})
    for path in (run / "phase4_responses").glob("*.jsonl"):
        _rewrite(path, {"response": ""})
    return run


def _unit(run: Path) -> tuple[str, str]:
    return sorted(k for k, a in current_answers(run).items() if a.task == "task-1")[0]


@pytest.mark.slow
def test_the_export_neutralises_formulas_and_is_private(hostile_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "next.csv"
    result = invoke(["label", "--run", str(hostile_run), "--export", str(out), "-n", "10"])
    no_traceback(result)
    assert result.exit_code == 0, result.output
    with out.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len({(r['datapoint_id'], r['student']) for r in rows}) == 10 and len(rows) >= 20  # 2-3 factors each
    cells = [row[c] for row in rows for c in ("prompt", "answer", "reference")]
    assert not [c for c in cells if c.startswith(DANGEROUS)], cells[:6]
    assert {c.removeprefix("'") for c in cells} <= set(FORMULAS)
    assert all(c.startswith("'") for c in cells)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


@pytest.mark.slow
def test_an_exported_sheet_with_a_formula_like_student_imports_back(tmp_path: Path) -> None:
    """The neutralising ``'`` on a student's or factor's name is taken off on import."""
    spec = SyntheticSpec(students={"=HYPERLINK(1)": 0.7, "@evil": 0.5}, datapoints_per_teacher=2)
    run = write_synthetic_run(tmp_path / "run", spec)
    out = tmp_path / "next.csv"
    assert invoke(["label", "--run", str(run), "--export", str(out), "-n", "4"]).exit_code == 0
    with out.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["student"] for r in rows} <= {"'=HYPERLINK(1)", "'@evil"}
    for row in rows:
        row["level"] = "High"
    with out.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    result = invoke(["label", "--run", str(run), "--import", str(out), "--labeler", "ana"])
    assert result.exit_code == 0, result.output
    students = {json.loads(line)["student"] for line in (run / LABELS_FILE).read_text(encoding="utf-8").splitlines()}
    assert students <= {"=HYPERLINK(1)", "@evil"} and students


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return write_synthetic_run(tmp_path / "run", SyntheticSpec(datapoints_per_teacher=2))


def _row(run: Path, labeler: str = "jos\u00e9") -> str:
    dp, student = _unit(run)
    return f"{dp},{student},accuracy,High,{labeler}\n"


@pytest.mark.parametrize("encoding", ["latin-1", "cp1252"])
def test_a_csv_that_is_not_utf8_is_one_clear_error(run: Path, tmp_path: Path, encoding: str) -> None:
    path = tmp_path / "labels.csv"
    path.write_bytes((HEADER + _row(run)).encode(encoding))
    result = invoke(["label", "--run", str(run), "--import", str(path)])
    no_traceback(result)
    assert result.exit_code == 2, result.output
    first = result.output.splitlines()[0]
    assert str(path) in first and "not UTF-8" in first and "line 2" in first, first
    assert "re-save it as UTF-8" in first, first
    assert not (run / LABELS_FILE).exists()


def test_utf16_without_a_byte_order_mark_is_one_clear_error(run: Path, tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    path.write_bytes((HEADER + _row(run)).encode("utf-16-le"))
    result = invoke(["label", "--run", str(run), "--import", str(path)])
    no_traceback(result)
    assert result.exit_code == 2, result.output
    first = result.output.splitlines()[0]
    assert str(path) in first and "not UTF-8" in first and "re-save it as UTF-8" in first, first


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16"])  # Python's utf-16 writes a byte-order mark
def test_a_byte_order_mark_is_read_as_such(run: Path, tmp_path: Path, encoding: str) -> None:
    path = tmp_path / "labels.csv"
    path.write_bytes((HEADER + _row(run)).encode(encoding))
    result = invoke(["label", "--run", str(run), "--import", str(path)])
    no_traceback(result)
    assert result.exit_code == 0, result.output
    labels = [json.loads(line) for line in (run / LABELS_FILE).read_text(encoding="utf-8").splitlines()]
    assert [(lab["factor"], lab["level"], lab["labeler"]) for lab in labels] == [("accuracy", "High", "jos\u00e9")]


def test_an_id_with_a_terminal_escape_is_echoed_as_text(run: Path, tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    evil = "dp\x1b]0;pwned\x07\x1b[2J\x9b31m\u202eid"
    path.write_text(HEADER + f"{evil},stu-a,accuracy,High,ana\n", encoding="utf-8")
    result = invoke(["label", "--run", str(run), "--import", str(path)])
    no_traceback(result)
    assert result.exit_code == 2, result.output
    for bad in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert bad not in result.output, repr(bad)
    assert "dp]0;pwned[2J31mid" in result.output  # the text, without its control characters


def test_the_label_lock_is_private(run: Path, tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    path.write_text(HEADER + _row(run, "ana"), encoding="utf-8")
    assert invoke(["label", "--run", str(run), "--import", str(path)]).exit_code == 0
    for name in (".human_labels.lock", LABELS_FILE):
        assert stat.S_IMODE((run / name).stat().st_mode) == 0o600, name
