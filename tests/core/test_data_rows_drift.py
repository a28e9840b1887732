"""Rows of a task's own data file (``tasks[].data``) changed between ``coeval run`` and
``--continue``. A row is known by its id column when the data names one, else by its content.
An edited row is drift: with ``--allow-drift`` it is redone and its old datapoint, answers and
judgments are superseded. A removed row is drift: its records stay on disk, left out of the
run, of status and of analysis. An added row is an addition (it is run); a reordering is no
change at all. The message names rows, never hashes."""

from __future__ import annotations

import csv
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from coeval.cli.main import cli

ROWS = [
    {"ticket": f"t{i}", "question": q, "answer": a}
    for i, (q, a) in enumerate([
        ("Where is my parcel?", "It ships tomorrow."),
        ("Can I get my money back?", "Yes, within 30 days."),
        ("How do I reset my password?", "Use the reset link."),
        ("Is the parcel insured?", "Yes, up to 100 EUR."),
        ("I was charged twice.", "We refund the second charge."),
    ], 1)
]
RUN = Path("runs") / "rows"


def _write(folder: Path, rows: list[dict[str, str]]) -> None:
    with (folder / "support.csv").open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=["ticket", "question", "answer"])
        writer.writeheader()
        writer.writerows(rows)


def _config(folder: Path, *, by_id: bool) -> Path:
    data = {"file": "support.csv", "prompt": "question", "reference": "answer", **({"id": "ticket"} if by_id else {})}
    raw = {
        "models": [
            {"name": "student-a", "interface": "mock", "roles": ["student"]},
            {"name": "student-b", "interface": "mock", "roles": ["student"]},
            {"name": "judge", "interface": "mock", "roles": ["judge"]},
        ],
        "tasks": [{"name": "support", "description": "Answer the customer's question.", "data": data,
                   "rubric": {"helpful": "The answer solves the problem."}}],
        "experiment": {"id": "rows", "storage_folder": "runs", "probe_mode": "disable"},
    }
    path = folder / "support.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


def _run(config: Path, *args: str) -> tuple[int, str, dict[str, Any]]:
    result = CliRunner().invoke(cli, ["run", str(config), "--json", *args])
    out = result.output
    doc = json.loads(out[out.index("\n{") + 1:] if not out.startswith("{") else out) if "{" in out else {}
    return result.exit_code, out, doc


def _calls(before: dict[str, Any], after: dict[str, Any]) -> dict[str, int]:
    """Calls made between two ``run --json`` results (their ``calls`` count the whole run)."""
    return {m: n - before["calls"].get(m, 0) for m, n in after["calls"].items() if n - before["calls"].get(m, 0)}


def _lines(phase: str) -> list[dict[str, Any]]:
    return [json.loads(line) for p in sorted((RUN / phase).glob("*.jsonl")) for line in p.read_text().splitlines()]


def _status() -> dict[str, dict[str, int]]:
    result = CliRunner().invoke(cli, ["status", "--run", str(RUN), "--json"])
    assert result.exit_code == 0, result.output
    return {p["phase"]: p["total"] for p in json.loads(result.output)["phases"] if "total" in p}


def _totals(status: dict[str, dict[str, int]]) -> tuple[tuple[int, int], ...]:
    """(expected, ok) of phases 3, 4 and 5."""
    return tuple((status[p]["expected"], status[p]["ok"])
                 for p in ("data_generation", "response_collection", "evaluation"))


def _analysis() -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["analyze", "--run", str(RUN)])
    assert result.exit_code == 0, result.output
    return json.loads((RUN / "analysis" / "summary.json").read_text())


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, ROWS)
    return tmp_path


def _first_run(project: Path, by_id: bool) -> tuple[Path, dict[str, Any]]:
    config = _config(project, by_id=by_id)
    code, out, doc = _run(config)
    assert code == 0, out
    assert doc["calls"] == {"student-a": 5, "student-b": 5, "judge": 10}
    assert _totals(_status()) == ((5, 5), (10, 10), (20, 20))
    return config, doc


@pytest.mark.slow
@pytest.mark.parametrize(("by_id", "label"), [(False, "row 2"), (True, "id t2")], ids=["content", "id-column"])
def test_an_edited_row_is_drift_and_once_allowed_is_redone_superseding_its_records(
        project: Path, by_id: bool, label: str) -> None:
    config, before = _first_run(project, by_id)
    rows = [dict(r) for r in ROWS]
    rows[1]["question"] = "Can I get a refund for my order?"
    _write(project, rows)

    code, out, _ = _run(config, "--continue")
    assert code == 2, out
    assert (f"task support: data: 1 row edited: {label} 'Can I get my money back?' -> "
            "'Can I get a refund for my order?'") in " ".join(out.split())
    assert "sha256" not in out

    code, out, after = _run(config, "--continue", "--allow-drift")
    assert code == 0, out
    assert _calls(before, after) == {"student-a": 1, "student-b": 1, "judge": 2}
    datapoints = _lines("phase3_datapoints")
    ids = [d["id"] for d in datapoints]
    assert len(ids) == 5 and len(set(ids)) == 5  # the old line of the edited row is gone
    edited = next(d for d in datapoints if d["prompt"].startswith("Can I get a refund"))
    assert edited["id"] == ("support__support-data__t2" if by_id else "support__support-data__row000002")
    answers = [r for r in _lines("phase4_responses") if r["datapoint_id"] == edited["id"]]
    assert len(answers) == 2 and all(r["input"].startswith("Can I get a refund") for r in answers)
    assert not [k for k, n in Counter(r["id"] for r in _lines("phase4_responses")).items() if n > 1]
    assert not [k for k, n in Counter(r["id"] for r in _lines("phase5_evaluations")).items() if n > 1]
    assert _totals(_status()) == ((5, 5), (10, 10), (20, 20))
    summary = _analysis()
    assert (summary["n_items"], summary["n_responses_scored"]) == (5, 10)
    assert summary["data_quality"]["left_out_datapoints"] == {}

    code, out, again = _run(config, "--continue")  # the drift is applied: not asked again, nothing redone
    assert code == 0, out
    assert _calls(after, again) == {}


@pytest.mark.slow
@pytest.mark.parametrize(("by_id", "label"), [(False, "row 4"), (True, "id t4")], ids=["content", "id-column"])
def test_a_removed_row_is_drift_and_once_allowed_is_left_out_of_status_and_analysis(
        project: Path, by_id: bool, label: str) -> None:
    config, before = _first_run(project, by_id)
    _write(project, [r for r in ROWS if r["ticket"] != "t4"])

    code, out, _ = _run(config, "--continue")
    assert code == 2, out
    assert f"task support: data: 1 row removed: {label} 'Is the parcel insured?'" in " ".join(out.split())

    code, out, after = _run(config, "--continue", "--allow-drift")
    assert code == 0, out
    assert _calls(before, after) == {}
    assert len(_lines("phase3_datapoints")) == 5  # its records stay on disk
    assert _totals(_status()) == ((4, 4), (8, 8), (16, 16))
    summary = _analysis()
    assert (summary["n_items"], summary["n_responses_scored"]) == (4, 8)
    assert summary["data_quality"]["left_out_datapoints"] == {"support": {"support-data": 1}}
    assert [w["message"] for w in summary["warnings"] if w["kind"] == "left_out_by_config"] == [
        "support: 1 datapoints whose rows left the task's data file stay on disk and are left out of the analysis, "
        "with their answers and judgments (as coeval status leaves them out)"]

    code, out, again = _run(config, "--continue")  # allowed once: not asked again
    assert code == 0, out
    assert _calls(after, again) == {}
    assert _totals(_status()) == ((4, 4), (8, 8), (16, 16))

    _write(project, ROWS)  # the row comes back: its records count again, nothing is made twice
    code, out, restored = _run(config, "--continue")
    assert code == 0, out
    assert _calls(again, restored) == {}
    assert _totals(_status()) == ((5, 5), (10, 10), (20, 20))


@pytest.mark.slow
@pytest.mark.parametrize("by_id", [False, True], ids=["content", "id-column"])
def test_an_added_row_is_run_without_asking(project: Path, by_id: bool) -> None:
    config, before = _first_run(project, by_id)
    rows = [*ROWS[:2], {"ticket": "t6", "question": "Do you ship abroad?", "answer": "Yes, to the EU."}, *ROWS[2:]]
    _write(project, rows)
    code, out, after = _run(config, "--continue", "--allow-drift")
    assert code == 0, out
    assert _calls(before, after) == {"student-a": 1, "student-b": 1, "judge": 2}
    ids = [d["id"] for d in _lines("phase3_datapoints")]
    assert len(ids) == 6 and len(set(ids)) == 6
    assert _totals(_status()) == ((6, 6), (12, 12), (24, 24))
    rows.append({"ticket": "t7", "question": "Can I pay by card?", "answer": "Yes."})
    _write(project, rows)
    code, out, more = _run(config, "--continue")  # no --allow-drift needed: an addition is not drift
    assert code == 0, out
    assert _calls(after, more) == {"student-a": 1, "student-b": 1, "judge": 2}
    assert _totals(_status()) == ((7, 7), (14, 14), (28, 28))
    summary = _analysis()
    assert (summary["n_items"], summary["n_responses_scored"]) == (7, 14)
    assert summary["data_quality"]["left_out_datapoints"] == {}


@pytest.mark.slow
@pytest.mark.parametrize("by_id", [False, True], ids=["content", "id-column"])
def test_reordered_rows_are_no_change(project: Path, by_id: bool) -> None:
    config, before = _first_run(project, by_id)
    rows = list(ROWS)
    random.Random(4).shuffle(rows)
    assert rows != ROWS
    _write(project, rows)
    code, out, after = _run(config, "--continue")
    assert code == 0, out
    assert "drift" not in out
    assert _calls(before, after) == {}
    assert len(_lines("phase3_datapoints")) == 5
    assert _totals(_status()) == ((5, 5), (10, 10), (20, 20))
    summary = _analysis()
    assert (summary["n_items"], summary["n_responses_scored"]) == (5, 10)
    assert summary["data_quality"]["left_out_datapoints"] == {}
