"""`coeval analyze` on a real run in the legacy format, with the agreement statistics rebuilt
independently from the raw JSONL (stdlib json, no coeval code) and checked with sklearn,
krippendorff and pingouin."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pandas as pd
import pingouin
import pytest
from click.testing import CliRunner
from coeval.cli.main import cli

sk_metrics = pytest.importorskip("sklearn.metrics")

LEVEL = {"Low": 0, "Medium": 1, "High": 2}
#: summary.json writes 6 significant digits (SIGNIFICANT_DIGITS): a relative error of at most 5e-6
SUMMARY_PRECISION = 5e-6


@pytest.fixture(scope="module")
def analysed(reference_run: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("reference-analysis")
    result = CliRunner().invoke(cli, ["analyze", "--run", str(reference_run), "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    return out, json.loads((out / "summary.json").read_text())


def _raw_units(run: Path) -> dict[tuple[str, str], dict[str, int]]:
    """(response_id, factor) -> {judge: level}, last valid record of an id winning."""
    latest: dict[str, dict[str, Any]] = {}
    for path in sorted((run / "phase5_evaluations").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            valid = rec.get("status") != "failed" and rec.get("scores")
            if valid or rec["id"] not in latest:
                latest.pop(rec["id"], None)
                latest[rec["id"]] = rec
    units: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for rec in latest.values():
        if rec.get("status") == "failed" or not rec.get("scores"):
            continue
        for factor, word in rec["scores"].items():
            units[(rec["response_id"], factor)][rec["judge_model_id"]] = LEVEL[word]
    return units


def test_summary_has_the_documented_keys(analysed: tuple[Path, dict[str, Any]]) -> None:
    out, s = analysed
    assert {"students", "judges", "agreement", "teachers", "n_records", "n_failed", "n_duplicates"} <= set(s)
    assert s["n_records"] == 7987
    assert s["n_duplicates"] == 44  # ids reused on Extend in the legacy run
    assert s["n_failed"] == 9
    assert s["data_quality"]["n_orphaned"] == 0  # students recovered from phase 4
    assert len(s["students"]) == 5
    for student in s["students"].values():
        assert set(student) >= {"score", "ci", "rank", "robust_score"}
        low, high = student["ci"]
        assert low <= student["score"] <= high
    assert sorted(st["rank"] for st in s["students"].values()) == [1, 2, 3, 4, 5]
    for judge in s["judges"].values():
        assert {"weight", "failure_rate"} <= set(judge)
    assert s["judges"]["smollm2-1b7"]["n_failed"] == 9
    assert s["judges"]["smollm2-1b7"]["failure_rate"] == pytest.approx(9 / 1985, rel=SUMMARY_PRECISION)
    assert set(s["agreement"]["icc"]) >= {"icc3_1", "icc3_k", "icc2_1"}
    for pair in s["agreement"]["pairwise"]:
        assert set(pair) >= {"a", "b", "n", "spa", "wpa", "kappa"}
    for teacher in s["teachers"].values():
        assert "discrimination" in teacher
    assert (out / "report.html").stat().st_size > 1_000_000  # plotly.js inside
    for name in ("students", "student_scores", "judges", "judge_pairs", "teachers", "responses"):
        assert (out / "tables" / f"{name}.csv").exists()
        assert (out / "tables" / f"{name}.parquet").exists()
    students = pd.read_parquet(out / "tables" / "students.parquet")
    assert set(students["student"]) == set(s["students"])


def test_kappa_matches_sklearn_on_raw_records(
    reference_run: Path, analysed: tuple[Path, dict[str, Any]]
) -> None:
    _, s = analysed
    units = _raw_units(reference_run)
    for pair in s["agreement"]["pairwise"]:
        a = [u[pair["a"]] for u in units.values() if pair["a"] in u and pair["b"] in u]
        b = [u[pair["b"]] for u in units.values() if pair["a"] in u and pair["b"] in u]
        assert pair["n"] == len(a)
        assert pair["spa"] == pytest.approx(np.mean(np.array(a) == np.array(b)))
        if pair["kappa"] is None:
            assert len(set(a) | set(b)) == 1
            continue
        assert pair["kappa"] == pytest.approx(sk_metrics.cohen_kappa_score(a, b, labels=[0, 1, 2]), rel=SUMMARY_PRECISION)
        assert pair["kappa_linear"] == pytest.approx(
            sk_metrics.cohen_kappa_score(a, b, labels=[0, 1, 2], weights="linear"), rel=SUMMARY_PRECISION
        )


def test_alpha_and_icc_match_reference_packages(
    reference_run: Path, analysed: tuple[Path, dict[str, Any]]
) -> None:
    _, s = analysed
    units = _raw_units(reference_run)
    judges = s["agreement"]["judges"]
    matrix = np.array([[u.get(j, np.nan) for j in judges] for u in units.values()], float)
    alpha = krippendorff.alpha(reliability_data=matrix.T, level_of_measurement="ordinal")
    assert s["agreement"]["krippendorff_alpha"] == pytest.approx(alpha, rel=SUMMARY_PRECISION)

    icc_judges = s["agreement"]["icc"]["judges"]
    assert "qwen2p5-0b5" not in icc_judges  # 3 records: too few items in common
    cols = [judges.index(j) for j in icc_judges]
    complete = matrix[:, cols][~np.isnan(matrix[:, cols]).any(1)]
    assert s["agreement"]["icc"]["n_items"] == len(complete)
    n, k = complete.shape
    long = pd.DataFrame(
        {"item": np.repeat(np.arange(n), k), "rater": np.tile(np.arange(k), n), "score": complete.ravel()}
    )
    ref = pingouin.intraclass_corr(long, targets="item", raters="rater", ratings="score").set_index("Type")
    assert s["agreement"]["icc"]["icc3_1"] == pytest.approx(ref.loc["ICC(C,1)", "ICC"], rel=SUMMARY_PRECISION)
    assert s["agreement"]["icc"]["icc3_k"] == pytest.approx(ref.loc["ICC(C,k)", "ICC"], rel=SUMMARY_PRECISION)
    assert s["agreement"]["icc"]["icc2_1"] == pytest.approx(ref.loc["ICC(A,1)", "ICC"], rel=SUMMARY_PRECISION)


def test_student_scores_match_a_plain_recomputation(
    reference_run: Path, analysed: tuple[Path, dict[str, Any]]
) -> None:
    """Mean over responses of (mean over factors of mean over judges), students from phase 4."""
    _, s = analysed
    student_of: dict[str, str] = {}
    for path in sorted((reference_run / "phase4_responses").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            student_of[rec["id"]] = rec["student_model_id"]
    per_response: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (response, factor), by_judge in _raw_units(reference_run).items():
        per_response[response][factor].extend(level / 2 for level in by_judge.values())
    by_student: dict[str, list[float]] = defaultdict(list)
    for response, factors in per_response.items():
        by_student[student_of[response]].append(np.mean([np.mean(v) for v in factors.values()]))
    for student, scores in by_student.items():
        assert s["students"][student]["score"] == pytest.approx(np.mean(scores), abs=1e-6)


def test_headline_ranking_of_the_reference_run(analysed: tuple[Path, dict[str, Any]]) -> None:
    """The numbers docs/analysis.md reports for the reference run."""
    _, s = analysed
    assert s["headline"]["converged"] is True
    assert s["headline"]["n_conflicted"] == 2776
    assert s["headline"]["families"]["gpt-4o-mini"] == s["headline"]["families"]["gpt-3.5-turbo"] == "openai"
    # the two openai judges are the only ones that tell answers apart; the others are flagged
    assert s["judges"]["gpt-4o-mini"]["weight"] + s["judges"]["gpt-3.5-turbo"]["weight"] > 0.99
    for judge in ("qwen2p5-1b5", "smollm2-1b7", "qwen2p5-0b5"):
        assert s["judges"][judge]["reliability"] < 0.05
    # their bias on openai answers cannot be measured (no competent unrelated judge): prior only
    assert s["judges"]["gpt-4o-mini"]["family_bias_prior_share"] == 1.0
    order = sorted(s["students"], key=lambda x: s["students"][x]["headline_rank"])
    assert order[0] == "gpt-4o-mini" and order[-1] == "qwen2p5-0b5"
    assert s["students"]["gpt-4o-mini"]["rank_range"] == [1, 4]
    assert s["students"]["qwen2p5-0b5"]["rank_range"] == [4, 5]
    unadjusted = sorted(s["students"], key=lambda x: s["students"][x]["diagnostic_rank"])
    assert unadjusted[:2] == ["gpt-4o-mini", "gpt-3.5-turbo"]
    assert len(s["comparisons"]) == 10
    kinds = {(w["kind"], w["subject"]) for w in s["warnings"]}
    assert {
        ("self_preference", "gpt-4o-mini"),
        ("self_preference", "gpt-3.5-turbo"),
        ("family_preference", "gpt-4o-mini"),
        ("family_preference", "gpt-3.5-turbo"),
        ("not_determined", "gpt-4o-mini"),
        ("not_determined", "gpt-3.5-turbo"),
        ("flat_judge", "qwen2p5-1b5"),
        ("flat_judge", "smollm2-1b7"),
        ("flat_judge", "qwen2p5-0b5"),
        ("one_level", "qwen2p5-0b5"),
        ("students_alike", "qwen2p5-0b5"),  # the teacher: its students' means spread 0.049
        # three datapoints of teacher smollm2-1b7 (code_explanation 00020, data_interpretation
        # 00019 and 00020) were written again with another prompt after students had answered
        # the old ones: those 9 answers and their 36 judgments are stale
        ("stale_records", None),
    } == kinds
    stale = next(w for w in s["warnings"] if w["kind"] == "stale_records")
    assert stale["counts"] == {"response_collection": 9, "evaluation": 36}


def test_every_headline_number_of_the_reference_run_is_on_the_unit_scale(analysed: tuple[Path, dict[str, Any]]) -> None:
    _, s = analysed
    board = s["leaderboard"]
    assert [c["key"] for c in board["columns"]] == ["judged"]  # judges only: the headline is the judged score
    assert board["combined"] == "Headline = the judges' scores through the measurement model, every task alike."
    for row in board["rows"]:
        values = [row["headline"], *row["headline_ci"]]
        values += [v for cell in row["evidence"].values() for v in (cell["score"], *cell["ci"])]
        assert all(v is not None and 0.0 <= v <= 1.0 for v in values), row
        student = s["students"][row["student"]]
        assert [student["headline_score"], *student["headline_ci"]] == [row["headline"], *row["headline_ci"]]
        assert student["robust_score"] == student["headline_score"]  # schema 2's key, kept for one release
    # the link keeps the order and the rank ranges of the measurement model's own scale
    assert [r["student"] for r in board["rows"]] == [
        "gpt-4o-mini", "gpt-3.5-turbo", "qwen2p5-1b5", "smollm2-1b7", "qwen2p5-0b5"]  # fmt: skip
    assert not any("leaves [0, 1]" in note for note in s["headline_notes"])


def test_gpt_4o_mini_is_never_confidently_below_a_smaller_model(analysed: tuple[Path, dict[str, Any]]) -> None:
    _, s = analysed
    for pair in s["comparisons"]:
        if "gpt-4o-mini" in (pair["a"], pair["b"]) and pair["ci"][0] is not None:
            other = pair["b"] if pair["a"] == "gpt-4o-mini" else pair["a"]
            below = pair["ci"][1] < 0 if pair["a"] == "gpt-4o-mini" else pair["ci"][0] > 0
            assert not below, f"gpt-4o-mini confidently below {other}: {pair}"
    assert s["students"]["gpt-4o-mini"]["rank_range"][0] == 1
