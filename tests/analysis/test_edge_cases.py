"""Small and degenerate runs still produce every report, with what can be said."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner
from coeval.cli.main import cli

from .runs import datapoint, evaluation, response, write_run

RUBRIC = {"accuracy": "Correct.", "clarity": "Clear."}
DPS = [datapoint("t", "teach", i + 1, color="red") for i in range(3)]
TWO = [response(dp, s) for dp in DPS for s in ("s1", "s2")]


def _analyze(run: Path) -> dict:
    out = run.parent / f"{run.name}-out"
    result = CliRunner().invoke(cli, ["analyze", "--run", str(run), "--out", str(out), "--bootstrap", "50"])
    assert result.exit_code == 0, result.output
    assert (out / "report.html").exists() and (out / "tables").is_dir()
    summary = json.loads((out / "summary.json").read_text())
    summary["_output"] = result.output
    return summary


def test_one_judge_and_no_phase_3_or_4(tmp_path: Path) -> None:
    run = write_run(
        tmp_path / "r",
        rubric=RUBRIC,
        datapoints=DPS,
        responses=TWO,
        evaluations=[evaluation(r, "j1", {"accuracy": "High", "clarity": "Low"}) for r in TWO],
    )
    shutil.rmtree(run / "phase3_datapoints")
    shutil.rmtree(run / "phase4_responses")
    s = _analyze(run)
    assert s["students"]["s1"]["score"] == 0.5
    assert s["agreement"]["pairwise"] == [] and s["agreement"]["krippendorff_alpha"] is None
    assert "two LLM judges" in s["agreement"]["note"]
    assert s["judges"]["j1"]["weight"] == 1.0


def test_every_record_failed(tmp_path: Path) -> None:
    run = write_run(
        tmp_path / "r",
        rubric=RUBRIC,
        datapoints=DPS,
        responses=TWO,
        evaluations=[evaluation(r, "j1", {}, status="failed", error_kind="timeout") for r in TWO],
    )
    s = _analyze(run)
    # the students stay listed, unscored, with what went wrong (never silently dropped)
    assert set(s["students"]) == {"s1", "s2"}
    for student in s["students"].values():
        assert student["robust_score"] is None and student["robust_rank"] is None
        assert (student["n_answers"], student["n_failed"], student["n_unjudged"]) == (3, 0, 3)
        assert student["failure_rate"] == 0.0 and student["missing_rate"] == 1.0
    assert s["n_failed"] == 6
    assert s["judges"]["j1"]["failure_rate"] == 1.0
    assert s["judges"]["j1"]["errors"] == {"timeout": 6}
    assert s["judges"]["j1"]["weight"] == 0.0
    assert "No usable score" in s["_output"]


def test_one_student(tmp_path: Path) -> None:
    one = [response(dp, "s1") for dp in DPS]
    run = write_run(
        tmp_path / "r",
        rubric=RUBRIC,
        datapoints=DPS,
        responses=one,
        evaluations=[
            evaluation(r, j, {"accuracy": "High", "clarity": "Medium"}) for r in one for j in ("j1", "j2")
        ],
    )
    s = _analyze(run)
    assert s["students"]["s1"]["score"] == 0.75
    assert s["students"]["s1"]["rank"] == 1
    assert s["agreement"]["pairwise"][0]["spa"] == 1.0


def test_judges_that_agree_on_one_level_have_no_correlation_to_report(tmp_path: Path) -> None:
    """Every judge gave High to everything: a judge's correlation with the others is
    undefined (no variance), so it is null, not a made-up 0; the weights stay equal."""
    run = write_run(
        tmp_path / "r",
        rubric=RUBRIC,
        datapoints=DPS,
        responses=TWO,
        evaluations=[
            evaluation(r, j, {"accuracy": "High", "clarity": "High"}) for r in TWO for j in ("j1", "j2", "j3")
        ],
    )
    s = _analyze(run)
    for name in ("j1", "j2", "j3"):
        assert s["judges"][name]["consensus_r"] is None, name
        assert s["judges"][name]["weight"] == 0.333333  # summary.json: 6 significant digits


def test_summary_has_the_same_agreement_fields_with_one_judge(tmp_path: Path) -> None:
    """A consumer of summary.json reads the same keys whatever the run: with one judge the
    agreement statistics are null and the lists empty, not missing."""
    one = write_run(
        tmp_path / "one",
        rubric=RUBRIC,
        datapoints=DPS,
        responses=TWO,
        evaluations=[evaluation(r, "j1", {"accuracy": "High", "clarity": "Low"}) for r in TWO],
    )
    two = write_run(
        tmp_path / "two",
        rubric=RUBRIC,
        datapoints=DPS,
        responses=TWO,
        evaluations=[
            evaluation(r, j, {"accuracy": a, "clarity": "Low"})
            for r, a in zip(TWO, ["High", "Low", "Medium", "High", "Low", "Medium"], strict=True)
            for j in ("j1", "j2")
        ],
    )
    s1, s2 = _analyze(one)["agreement"], _analyze(two)["agreement"]
    assert set(s2) - {"note"} <= set(s1)
    assert set(s1["icc"]) == set(s2["icc"])
    assert s1["krippendorff_alpha_nominal"] is None
    assert s1["icc"]["icc3_1_ci"] == [None, None] and s1["icc"]["excluded"] == []


def test_an_unfinished_run_is_analysed_with_a_warning(tmp_path: Path) -> None:
    """A run whose meta.json says it did not complete (interrupted, or failed items) still
    gets its numbers, and the user is told they cover only what was written."""
    run = write_run(
        tmp_path / "r",
        rubric=RUBRIC,
        datapoints=DPS,
        responses=TWO,
        evaluations=[evaluation(r, "j1", {"accuracy": "High", "clarity": "Low"}) for r in TWO],
    )
    (run / "meta.json").write_text(json.dumps({"experiment_id": "r", "status": "incomplete"}))
    s = _analyze(run)
    assert s["run_status"] == "incomplete"
    assert "did not complete" in s["_output"] and "incomplete" in s["_output"]
    page = (run.parent / "r-out" / "report.html").read_text(encoding="utf-8")
    overview = page.split('id="overview"')[1].split("<section")[0]
    assert "did not complete" in overview and "incomplete" in overview

    done = write_run(
        tmp_path / "d",
        rubric=RUBRIC,
        datapoints=DPS,
        responses=TWO,
        evaluations=[evaluation(r, "j1", {"accuracy": "High", "clarity": "Low"}) for r in TWO],
    )
    s = _analyze(done)
    assert s["run_status"] == "completed" and "did not complete" not in s["_output"]


def test_a_run_awaiting_phase_5_after_ingest_is_flagged(tmp_path: Path) -> None:
    """Ingest takes the evaluation phase out of phases_completed until `--continue` runs it."""
    run = write_run(
        tmp_path / "r",
        rubric=RUBRIC,
        datapoints=DPS,
        responses=TWO,
        evaluations=[evaluation(r, "j1", {"accuracy": "High", "clarity": "Low"}) for r in TWO],
    )
    meta = {"experiment_id": "r", "status": "completed", "phases_completed": ["attribute_mapping"]}
    (run / "meta.json").write_text(json.dumps(meta))
    s = _analyze(run)
    assert "evaluation phase" in (s["run_warning"] or "")


def test_summary_json_floats_carry_six_significant_digits_not_float32_noise(tmp_path: Path) -> None:
    import numpy as np
    from coeval_analysis.reports.summary import to_jsonable

    noisy = 0.5500000149011612  # a mean of float32 scores, as an earlier summary.json showed it
    out = to_jsonable({"a": noisy, "b": [np.float32(0.1), 1 / 3], "c": np.float64(1234567.891), "d": float("nan"),
                       "e": 2.5e-12, "f": 7, "g": -0.0})
    assert json.dumps(out) == '{"a": 0.55, "b": [0.1, 0.333333], "c": 1234570.0, "d": null, "e": 2.5e-12, "f": 7, "g": -0.0}'
