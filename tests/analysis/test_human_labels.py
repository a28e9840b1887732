"""Human labels in the run folder, the reference table they make with gold, each judge's
agreement with them, and what analyze adds (and leaves alone) because of them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from coeval_analysis import analyze, load_run
from coeval_analysis.analysis import AnalysisOptions
from coeval_analysis.labels.human_labels import (
    LABELS_FILE,
    HumanLabel,
    current_answers,
    read_labels,
    run_labels,
    save_labels,
)
from coeval_analysis.labels.reference_judge import (
    NOT_IN_HEADLINE,
    REFERENCE_NOT_MEASURED,
    agreement_with,
    labels_needed,
    reference_table,
)
from sklearn.metrics import cohen_kappa_score

QUALITY = {"stu-a": "High", "stu-b": "High", "stu-c": "Medium", "stu-d": "Low", "stu-e": "Low"}


def _labels(run: Path, n: int, labeler: str = "me", factor: str = "accuracy") -> list[HumanLabel]:
    out: list[HumanLabel] = []
    for (dp, st), a in sorted(current_answers(run).items()):
        if a.task == "task-1" and len(out) < n:
            out.append(HumanLabel(dp, st, factor, QUALITY[st], labeler, response_id=a.response_id,
                                  answer_sha256=a.sha256))
    return out


def _lines(run: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run / LABELS_FILE).read_text(encoding="utf-8").splitlines()]


def test_a_labellers_second_label_replaces_the_first(make_run: Callable[..., Path]) -> None:
    run = make_run(datapoints_per_teacher=2)
    first = _labels(run, 3)
    save_labels(run, first)
    again = HumanLabel(**{**first[0].__dict__, "level": "Low", "labelled_at": ""})
    other = HumanLabel(**{**first[0].__dict__, "labeler": "you", "labelled_at": ""})
    save_labels(run, [again, other])
    lines = _lines(run)
    assert len(lines) == 4  # 3 units of "me" (one replaced) + one of "you"
    mine = [r for r in lines if r["datapoint_id"] == first[0].datapoint_id and r["student"] == first[0].student]
    assert sorted((r["labeler"], r["level"]) for r in mine) == [("me", "Low"), ("you", first[0].level)]
    rec = lines[-1]
    assert set(rec) == {"id", "datapoint_id", "student", "factor", "level", "labeler", "labelled_at",
                        "response_id", "answer_sha256"}
    assert rec["labelled_at"].endswith("Z") and len(rec["answer_sha256"]) == 64
    assert len(read_labels(run)) == 4


@pytest.mark.slow
def test_a_label_of_a_regenerated_answer_is_stale_and_unused(make_run: Callable[..., Path]) -> None:
    run = make_run(datapoints_per_teacher=2)
    labels = _labels(run, 2)
    save_labels(run, labels)
    target = labels[0]
    path = next(p for p in (run / "phase4_responses").glob("*.jsonl") if target.response_id in p.read_text())
    recs = [json.loads(x) for x in path.read_text().splitlines()]
    for r in recs:
        if r["id"] == target.response_id:
            r["response"] = "a regenerated answer"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    marked = run_labels(run)
    assert [lab.stale for lab in marked] == [True, False]
    ref = reference_table(load_run(run), marked)
    assert list(ref[ref["source"] == "human"]["datapoint_id"]) == [labels[1].datapoint_id]
    summary = analyze(load_run(run), AnalysisOptions(n_boot=0)).summary
    assert summary["reference"]["n_stale"] == 1 and summary["reference"]["n_labels"] == 1
    assert "1 stale" in summary["reference"]["line"]


def test_reference_table_maps_levels_like_judges_and_takes_gold(make_run: Callable[..., Path]) -> None:
    run = make_run(datapoints_per_teacher=2, gold=True)
    labels = [*_labels(run, 5), HumanLabel(*_labels(run, 1)[0].key[:3], "Medium", "you")]
    ref = reference_table(load_run(run), run_labels(run, labels))
    human = ref[ref["source"] == "human"].set_index(["datapoint_id", "student"])["score"]
    first = labels[0]
    # two labellers on one unit: their mean (High 1 and Medium 0.5)
    assert human.loc[(first.datapoint_id, first.student)] == 0.75
    assert sorted(set(human.drop(index=(first.datapoint_id, first.student)))) == [0.0, 0.5, 1.0]
    gold = ref[ref["source"] == "gold"]
    assert len(gold) == 2 * 2 * 3 * 5 and set(gold["factor"]) == {"gold"} and set(gold["score"]) <= {0.0, 1.0}
    assert list(ref.columns) == ["datapoint_id", "student", "factor", "score", "source"]


def test_agreement_statistics_exact() -> None:
    judge = np.array([1.0, 0.5, 0.0, 1.0, 0.5, 0.0, 1.0])
    ref = np.array([1.0, 0.5, 0.0, 0.0, 1.0, 0.5, 0.5])
    a = agreement_with(judge, ref)
    assert a["n"] == 7
    assert a["bias"] == pytest.approx(0.5 / 7)
    assert a["kappa_linear"] == pytest.approx(cohen_kappa_score(judge * 2, ref * 2, weights="linear"))
    assert a["pearson"] == pytest.approx(np.corrcoef(judge, ref)[0, 1])


def test_a_contrary_judge_disagrees_with_gold(make_run: Callable[..., Path], tmp_path: Path) -> None:
    run = make_run(datapoints_per_teacher=4, gold=True)
    # judge-4 answers the opposite of what it sees: High becomes Low
    for path in (run / "phase5_evaluations").glob("*.judge-4.evaluations.jsonl"):
        flip = {"High": "Low", "Low": "High", "Medium": "Medium"}
        recs = [json.loads(x) for x in path.read_text().splitlines()]
        for r in recs:
            r["scores"] = {k: flip[v] for k, v in r["scores"].items()}
        path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    judges = analyze(load_run(run), AnalysisOptions(n_boot=0)).summary["reference"]["judges"]
    assert judges["judge-4"]["gold"]["pearson"] < -0.3 and judges["judge-4"]["gold"]["kappa_linear"] < 0
    assert judges["judge-1"]["gold"]["pearson"] > 0.5 and judges["judge-1"]["gold"]["kappa_linear"] > 0.3
    assert "human" not in judges["judge-1"]


@pytest.mark.slow
def test_human_only_ranking_and_labels_line(make_run: Callable[..., Path]) -> None:
    run = make_run(datapoints_per_teacher=4)
    save_labels(run, _labels(run, 40))
    ref = analyze(load_run(run), AnalysisOptions(n_boot=200)).summary["reference"]
    ranking = ref["human_ranking"]["students"]
    assert list(ranking) == ["stu-a", "stu-b", "stu-c", "stu-d", "stu-e"]
    assert ranking["stu-c"] == {"score": 0.5, "ci": [0.5, 0.5], "n_answers": 8, "rank_range": [3, 3],
                                "rank_label": "3"}
    assert ref["n_labels"] == 40 and ref["n_answers"] == 40 and ref["labelers"] == {"me": 40}
    assert ref["line"].startswith("40 human labels on 40 answers")
    assert ref["judges"]["judge-1"]["human"]["n"] == 40


def test_too_few_labels_give_no_human_ranking(make_run: Callable[..., Path]) -> None:
    run = make_run(datapoints_per_teacher=2)
    save_labels(run, _labels(run, 6))
    assert analyze(load_run(run), AnalysisOptions(n_boot=0)).summary["reference"]["human_ranking"] is None


def test_labels_needed_estimate() -> None:
    comps = [{"a": "x", "b": "y", "diff": 0.1, "ci": [-0.01, 0.2]},
             {"a": "y", "b": "z", "diff": 0.3, "ci": [0.1, 0.5]}]  # fmt: skip
    need = labels_needed(comps, {"x": 10}, spread=0.25, level=0.95, n_factors=3, answers_of={"x": 100, "y": 30})
    # 2 (1.96 * 0.25 / 0.1)^2 = 48.02 -> 49 answers; y has only 30
    assert need == {"undetermined_pairs": 1, "no_intervals": False, "more_answers": 39 + 30, "more_labels": 3 * 69,
                    "students": {"x": 39, "y": 30}}


def test_no_interval_is_never_called_determined() -> None:
    """Too few datapoints: no pair has an interval, every rank range spans the run; the labels
    line must not say the comparisons are determined."""
    from coeval_analysis.labels.reference_judge import _needed_clause

    comps = [{"a": "x", "b": "y", "diff": 0.1, "ci": [None, None]}]
    need = labels_needed(comps, {}, spread=0.25, level=0.95, n_factors=3, answers_of={"x": 6, "y": 6})
    assert need["undetermined_pairs"] == 1 and need["no_intervals"] is True
    line = _needed_clause("4 human labels on 4 answers", need)
    assert "already determined" not in line
    assert line.endswith("no comparison has an interval (too few datapoints, or the bootstrap is off), so none is settled.")


@pytest.mark.slow
def test_labels_as_an_argument_equal_labels_in_the_run_folder(make_run: Callable[..., Path]) -> None:
    run = make_run(datapoints_per_teacher=2)
    labels = _labels(run, 12)
    given = analyze(load_run(run), AnalysisOptions(n_boot=50), human_labels=labels).summary
    save_labels(run, labels)
    stored = analyze(load_run(run), AnalysisOptions(n_boot=50)).summary
    assert given["reference"] == stored["reference"]


@pytest.mark.slow
def test_label_free_and_legacy_runs_analyse_as_before(make_run: Callable[..., Path]) -> None:
    for run in (make_run("plain", datapoints_per_teacher=2), make_run("legacy", datapoints_per_teacher=2,
                                                                         old_format=True)):
        a = analyze(load_run(run), AnalysisOptions(n_boot=50))
        b = analyze(load_run(run), AnalysisOptions(n_boot=50), human_labels=[])
        assert "reference" not in a.summary and "reference" not in a.tables
        a.summary.pop("generated_at"), b.summary.pop("generated_at")
        assert a.summary == b.summary
        # labels add their block and enter the headline as its reference judge
        save_labels(run, _labels(run, 10))
        c = analyze(load_run(run), AnalysisOptions(n_boot=50)).summary
        c.pop("generated_at")
        assert c.pop("reference")["n_labels"] == 10
        assert c["comparisons"] != a.summary["comparisons"]
        moved = ("comparisons", "students", "judges", "robust", "headline", "leaderboard", "headline_evidence",
                 "warnings", "headline_notes", "teachers")
        assert {k: v for k, v in c.items() if k not in moved} == {k: v for k, v in a.summary.items() if k not in moved}


@pytest.mark.slow
def test_report_and_console_show_the_labels_line(make_run: Callable[..., Path], tmp_path: Path) -> None:
    from click.testing import CliRunner
    from coeval.cli.main import cli
    from coeval_analysis.reports.html import build_page

    run = make_run(datapoints_per_teacher=4)
    save_labels(run, _labels(run, 40))
    sections, _ = build_page(analyze(load_run(run), AnalysisOptions(n_boot=50)))
    mine = [s for s in sections if s.id == "ground-truth"]
    assert len(mine) == 1
    assert "40 human labels on 40 answers" in str(mine[0].blocks[0].html)
    rows = mine[0].blocks[1].rows
    assert {r["judge"] for r in rows} >= {"judge-1", "judge-random"} and all(r["human_n"] == 40 for r in rows)
    assert [r["student"] for r in mine[0].blocks[2].rows] == ["stu-a", "stu-b", "stu-c", "stu-d", "stu-e"]
    result = CliRunner().invoke(cli, ["analyze", "--run", str(run), "--out", str(tmp_path / "out"), "--bootstrap",
                                      "50", "--report", "summary", "-v"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "40 human labels on 40 answers" in " ".join(result.output.split())  # with -v: every note
    written = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert written["reference"]["human_ranking"]["students"]["stu-c"]["score"] == 0.5


def _save_batch(run: str, labels: list[HumanLabel], go: Any) -> None:
    go.wait()
    for lab in labels:
        save_labels(run, [lab])


@pytest.mark.slow
def test_writers_in_two_processes_lose_no_label(make_run: Callable[..., Path]) -> None:
    import multiprocessing

    run = make_run(datapoints_per_teacher=2)
    factors = ("accuracy", "clarity", "depth")
    mine = [lab for f in factors for lab in _labels(run, 30, factor=f)]
    yours = [lab for f in factors for lab in _labels(run, 30, labeler="you", factor=f)]
    ctx = multiprocessing.get_context("spawn")
    go = ctx.Event()
    procs = [ctx.Process(target=_save_batch, args=(str(run), batch, go)) for batch in (mine, yours)]
    for p in procs:
        p.start()
    go.set()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    assert sorted(lab.key for lab in read_labels(run)) == sorted(lab.key for lab in mine + yours)
    assert len(_lines(run)) == 180


def test_labels_the_fit_cannot_check_say_they_do_not_move_the_headline(make_run: Callable[..., Path]) -> None:
    """Five labels on one datapoint's answers and one on the next: too few for the fit to
    tell the labels' agreement with the judges from chance, so their scale stays at the
    floor. The summary, its warnings and the labels line say so, rather than leave a user
    who labelled to think the ranking used the labels."""
    run = make_run(datapoints_per_teacher=2)
    save_labels(run, _labels(run, 6))
    summary = analyze(load_run(run), AnalysisOptions(n_boot=0)).summary
    ref = summary["reference"]
    assert ref["in_headline"] is False
    assert ref["line"].endswith(NOT_IN_HEADLINE)
    assert [w["message"] for w in summary["warnings"] if w["kind"] == "reference_not_measured"] == [
        REFERENCE_NOT_MEASURED]


def test_labels_the_fit_measures_enter_the_headline(make_run: Callable[..., Path]) -> None:
    run = make_run(datapoints_per_teacher=4)
    save_labels(run, _labels(run, 40))
    summary = analyze(load_run(run), AnalysisOptions(n_boot=0)).summary
    assert summary["reference"]["in_headline"] is True
    assert NOT_IN_HEADLINE not in summary["reference"]["line"]
    assert not [w for w in summary["warnings"] if w["kind"] == "reference_not_measured"]


def test_a_run_without_labels_or_gold_has_no_reference_warning(make_run: Callable[..., Path]) -> None:
    summary = analyze(load_run(make_run(datapoints_per_teacher=2)), AnalysisOptions(n_boot=0)).summary
    assert "reference" not in summary
    assert not [w for w in summary["warnings"] if w["kind"] == "reference_not_measured"]


@pytest.mark.slow
@pytest.mark.parametrize("n_labels", [2, 40])
def test_whether_labels_move_the_headline_is_what_the_numbers_do(make_run: Callable[..., Path], n_labels: int) -> None:
    """The labels line and its warning say the labels do not move the headline exactly when
    the headline with them equals the headline without them."""
    run = make_run(datapoints_per_teacher=4)
    bare = analyze(load_run(run), AnalysisOptions(n_boot=50), human_labels=[]).summary
    save_labels(run, _labels(run, n_labels))
    s = analyze(load_run(run), AnalysisOptions(n_boot=50)).summary
    moved = any(abs(s["students"][k]["headline_score"] - v["headline_score"]) >= 0.0005
                for k, v in bare["students"].items())  # fmt: skip
    assert s["reference"]["in_headline"] is moved
    warned = any(w["kind"] == "reference_not_measured" for w in s["warnings"])
    assert warned is (not moved)
    assert ("do not move the headline" in s["reference"]["line"]) is (not moved)
