"""The loader's rules for damaged, duplicated, old-format and mixed records: each record is
used or counted, never silently dropped."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval_analysis import analyze, load_run
from coeval_analysis.errors import AnalysisInputError
from coeval_analysis.loading.columns import parse_score

from .runs import datapoint, evaluation, response, write_run

RUBRIC = {"accuracy": "Correct.", "clarity": "Clear."}


def _basic(n: int = 2) -> tuple[list, list]:
    dps = [datapoint("t", "teach", i + 1) for i in range(n)]
    resps = [response(dp, s) for dp in dps for s in ("s1", "s2")]
    return dps, resps


def test_truncated_last_line_is_skipped_and_counted(tmp_path: Path) -> None:
    dps, resps = _basic()
    evs = [evaluation(r, "j1", {"accuracy": "High", "clarity": "Low"}) for r in resps]
    run = write_run(
        tmp_path / "r",
        rubric=RUBRIC,
        datapoints=dps,
        responses=resps,
        evaluations=[*evs, '{"id": "cut', "[1, 2]"],
    )
    data = load_run(run)
    assert data.quality.n_records == 4
    assert data.quality.n_bad_lines == 2
    assert len(data.units) == 8


def test_last_valid_record_of_an_id_wins(tmp_path: Path) -> None:
    dps, resps = _basic(1)
    r1, r2 = resps
    evs = [
        evaluation(r1, "j1", {}, status="failed", error="parse_error: no JSON", error_kind="parse_error"),
        evaluation(r1, "j1", {"accuracy": "High", "clarity": "High"}),  # retry of the same id: wins
        evaluation(r2, "j1", {"accuracy": "Low", "clarity": "Low"}),
        evaluation(r2, "j1", {}, status="failed"),  # a later failure does not replace a valid record
    ]
    data = load_run(
        write_run(tmp_path / "r", rubric=RUBRIC, datapoints=dps, responses=resps, evaluations=evs)
    )
    q = data.quality
    assert (q.n_records, q.n_duplicates, q.n_superseded_failures, q.n_failed) == (4, 2, 2, 0)
    by_student = data.units.groupby("student", observed=True)["value"].mean()
    assert by_student["s1"] == 1.0 and by_student["s2"] == 0.0


def test_old_records_get_students_from_phase_4_and_empty_scores_are_failures(tmp_path: Path) -> None:
    dps, resps = _basic(1)
    evs = [
        evaluation(resps[0], "j1", {"accuracy": "High", "clarity": "Medium"}, old=True),
        evaluation(resps[1], "j1", {}, old=True),  # no status, no scores: a failure
    ]
    data = load_run(
        write_run(tmp_path / "r", rubric=RUBRIC, datapoints=dps, responses=resps, evaluations=evs)
    )
    assert data.quality.n_failed == 1
    assert data.quality.n_orphaned == 0
    assert set(data.units["student"].astype(str)) == {"s1"}
    assert data.records["failed"].sum() == 1


def test_records_whose_response_is_unknown_are_orphaned(tmp_path: Path) -> None:
    dps, resps = _basic(1)
    ghost = dict(resps[0], id="t__teach__00099__s1")
    evs = [
        evaluation(resps[0], "j1", {"accuracy": "High", "clarity": "High"}),
        evaluation(ghost, "j1", {"accuracy": "High", "clarity": "High"}, old=True),
    ]
    data = load_run(
        write_run(tmp_path / "r", rubric=RUBRIC, datapoints=dps, responses=resps, evaluations=evs)
    )
    assert data.quality.n_orphaned == 1
    assert len(data.units) == 2


def test_invalid_values_and_unknown_factors_are_counted_not_scored(tmp_path: Path) -> None:
    dps, resps = _basic(1)
    evs = [
        evaluation(resps[0], "j1", {"accuracy": "Excellent", "clarity": "High"}),
        evaluation(resps[1], "j1", {"accuracy": "Low", "clarity": "0.75", "humour": "High"}),
    ]
    data = load_run(
        write_run(tmp_path / "r", rubric=RUBRIC, datapoints=dps, responses=resps, evaluations=evs)
    )
    q = data.quality
    assert q.n_invalid_scores == 1 and q.invalid_values == {"Excellent": 1}
    assert q.n_unknown_factor_scores == 1 and q.unknown_factors == {"humour": 1}
    assert q.n_incomplete == 1 and q.missing_factors == {"accuracy": 1}
    values = sorted(data.units["value"].tolist())
    assert values == [0.0, 0.75, 1.0]


def test_per_factor_records_merge_by_response_and_judge(tmp_path: Path) -> None:
    dps, resps = _basic(1)
    evs = []
    for r in resps:
        for factor, word in (("accuracy", "High"), ("clarity", "Medium")):
            rec = evaluation(r, "j1", {factor: word}, factor=factor, evaluation_mode="per_factor")
            rec["id"] = f"{rec['id']}__{factor}"
            evs.append(rec)
    evs.pop()  # the last response misses its clarity record
    data = load_run(
        write_run(tmp_path / "r", rubric=RUBRIC, datapoints=dps, responses=resps, evaluations=evs)
    )
    assert data.quality.n_incomplete == 1
    assert data.quality.missing_factors == {"clarity": 1}
    assert len(data.units) == 3


def test_mixed_rubric_with_metric_factor_is_complete(tmp_path: Path) -> None:
    """Judges score the LLM factors, the metric evaluator the metric one: nothing is invalid
    (a mixed rubric must never mark every record incomplete)."""
    rubric = {"accuracy": "Correct.", "overlap": {"metric": "bleu", "description": "BLEU vs reference"}}
    dps, resps = _basic(2)
    evs = [
        evaluation(r, j, {"accuracy": "High" if r["student_model_id"] == "s1" else "Low"})
        for r in resps
        for j in ("j1", "j2")
    ]
    evs += [
        {
            "id": f"{r['id']}__metric",
            "response_id": r["id"],
            "datapoint_id": r["datapoint_id"],
            "task_id": "t",
            "teacher_model_id": "teach",
            "student_model_id": r["student_model_id"],
            "judge_model_id": "metric",
            "evaluator": "metric",
            "scores": {"overlap": 0.5},
            "status": "ok",
            "metrics": {"overlap": "bleu"},
        }
        for r in resps
    ]
    run = write_run(tmp_path / "r", rubric=rubric, datapoints=dps, responses=resps, evaluations=evs)
    data = load_run(run)
    q = data.quality
    assert (q.n_incomplete, q.n_failed, q.n_unknown_factor_scores, q.missing_factors) == (0, 0, 0, {})
    s = analyze(data).summary
    # score = mean over factors: s1 (1 + 0.5) / 2, s2 (0 + 0.5) / 2
    assert s["students"]["s1"]["score"] == pytest.approx(0.75)
    assert s["students"]["s2"]["score"] == pytest.approx(0.25)
    assert s["evaluators"]["metric"]["overlap"]["s1"]["score"] == pytest.approx(0.5)
    assert set(s["agreement"]["judges"]) == {"j1", "j2"}  # the metric evaluator is not a judge
    assert "metric" not in [p["a"] for p in s["agreement"]["pairwise"]]


def test_label_records_give_per_label_precision_recall_f1(tmp_path: Path) -> None:
    rubric = {"accuracy": "Correct."}
    dps = [
        datapoint("t", "teach", i + 1, sentiment=lab)
        for i, lab in enumerate(["positive", "negative", "neutral"])
    ]
    answers = {
        "s1": ["Positive.", "negative", "positive"],
        "s2": ["**Negative**", "negative", "I think neutral"],
    }
    resps = [response(dp, s, answers[s][i]) for s in answers for i, dp in enumerate(dps)]
    evs = [evaluation(r, "j1", {"accuracy": "High"}) for r in resps]
    for r in resps:
        gold = next(d for d in dps if d["id"] == r["datapoint_id"])["sampled_target_attributes"]["sentiment"]
        hit = r["response"].strip("*. ").lower() == gold
        evs.append(
            {
                "id": f"{r['id']}__label",
                "response_id": r["id"],
                "datapoint_id": r["datapoint_id"],
                "task_id": "t",
                "teacher_model_id": "teach",
                "student_model_id": r["student_model_id"],
                "judge_model_id": "label",
                "evaluator": "label",
                "scores": {"sentiment": float(hit)},
                "status": "ok",
            }
        )
    run = write_run(
        tmp_path / "r",
        rubric=rubric,
        datapoints=dps,
        responses=resps,
        evaluations=evs,
        target_attrs={"sentiment": ["positive", "negative", "neutral"]},
        label_attributes=["sentiment"],
    )
    s = analyze(load_run(run)).summary
    rep = s["labels"]["t/sentiment"]
    per = {r["label"]: r for r in rep["per_label"]}
    # predictions: s1 positive, negative, positive; s2 negative, negative, "i think neutral" (no label)
    assert set(per) == {"positive", "negative", "neutral"}  # an answer that is no label is not a label
    assert per["positive"]["tp"] == 1 and per["positive"]["fp"] == 1 and per["positive"]["fn"] == 1
    assert per["negative"]["tp"] == 2 and per["negative"]["fp"] == 1
    assert per["neutral"]["tp"] == 0 and per["neutral"]["fn"] == 2
    assert rep["accuracy"] == pytest.approx(3 / 6)
    assert rep["students"]["s1"]["accuracy"] == pytest.approx(2 / 3)
    # the label scores agree with the evaluator's own 1/0 scores
    assert s["evaluators"]["label"]["sentiment"]["s2"]["score"] == pytest.approx(1 / 3)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("High", (1.0, 2)),
        ("medium", (0.5, 1)),
        (" LOW ", (0.0, 0)),
        (0.5, (0.5, 1)),
        ("0.8423", (0.8423, -1)),
        ({"score": "High", "reason": "r"}, (1.0, 2)),
        ('{"score": 1}', (1.0, 2)),
        (1.5, (np.nan, -1)),
        ("Excellent", (np.nan, -1)),
        (True, (np.nan, -1)),
        ("nan", (np.nan, -1)),
        (None, (np.nan, -1)),
    ],
)
def test_parse_score(raw: object, expected: tuple[float, int]) -> None:
    value, level = parse_score(raw)
    assert level == expected[1]
    assert (np.isnan(value) and np.isnan(expected[0])) or value == pytest.approx(expected[0])


def test_not_a_run_folder(tmp_path: Path) -> None:
    with pytest.raises(AnalysisInputError, match="no evaluation files"):
        load_run(tmp_path)
    with pytest.raises(AnalysisInputError, match="no such run folder"):
        load_run(tmp_path / "missing")


def test_cli_reports_bad_input_with_exit_code_2_and_no_traceback(tmp_path: Path) -> None:
    dps, resps = _basic(1)
    run = write_run(
        tmp_path / "r",
        rubric=RUBRIC,
        datapoints=dps,
        responses=resps,
        evaluations=[evaluation(resps[0], "j1", {"accuracy": "High"})],
    )
    (run / "meta.json").write_text("{not json")
    result = CliRunner().invoke(cli, ["analyze", "--run", str(run), "--out", str(tmp_path / "o"), "-q"])
    assert result.exit_code == 2
    assert "meta.json" in result.output and "not valid JSON" in result.output
    assert "Traceback" not in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(cli, ["analyze", "--run", str(empty), "-q"])
    assert result.exit_code == 2 and "phase5_evaluations" in result.output
    result = CliRunner().invoke(cli, ["analyze", "--run", str(run), "--report", "nope"])
    assert result.exit_code == 2 and "unknown report nope" in result.output


@pytest.mark.slow
def test_files_duckdb_cannot_read_are_read_line_by_line_with_the_same_result(make_run, monkeypatch) -> None:
    import duckdb
    from coeval_analysis.loading import jsonl

    run = make_run(failure_rate=0.05, duplicate_rate=0.05, datapoints_per_teacher=6, seed=9)
    fast = analyze(load_run(run)).summary
    real = jsonl._duck_read

    def picky(con, files, *args):  # DuckDB "fails" on every evaluation file of judge-2
        if any("judge-2" in p.name for p in files):
            raise duckdb.InvalidInputException("simulated unreadable file")
        return real(con, files, *args)

    monkeypatch.setattr(jsonl, "_duck_read", picky)
    slow = analyze(load_run(run)).summary
    for key in ("n_records", "n_duplicates", "n_failed", "data_quality", "agreement"):
        assert slow[key] == fast[key], key
    for name, student in fast["students"].items():
        assert slow["students"][name]["score"] == pytest.approx(student["score"])
        assert slow["students"][name]["robust_score"] == pytest.approx(student["robust_score"])
