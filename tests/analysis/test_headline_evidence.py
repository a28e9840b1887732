"""The headline takes each kind of evidence in its own unit: code tests and checks are pass
rates that no judge's scale can overrule, the rubric's weights combine them as declared,
gold the rubric does not ask for is shown beside the ranking, and every number is in [0, 1]."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from coeval_analysis import analyze, load_run
from coeval_analysis.analysis import AnalysisOptions
from coeval_analysis.leaderboard import leaderboard

from .runs import datapoint, evaluation, response, write_run

N_DATAPOINTS = 12
OPTIONS = AnalysisOptions(n_boot=200, seed=0)


def _run(tmp_path: Path, rubric: dict[str, Any], scores: dict[str, dict[str, list[Any]]]) -> dict[str, Any]:
    """A run of one task: ``scores[student][scorer]`` is a list over datapoints of
    (evaluator, {factor: score}) for that scorer's record of the student's answer."""
    dps = [datapoint("t", "teacher", k) for k in range(N_DATAPOINTS)]
    resps, evals = [], []
    for student, by_scorer in scores.items():
        for k, dp in enumerate(dps):
            r = response(dp, student)
            resps.append(r)
            for scorer, per_dp in by_scorer.items():
                if per_dp[k] is None:  # this scorer did not grade that answer
                    continue
                evaluator, values = per_dp[k]
                evals.append(evaluation(r, scorer, values, evaluator=evaluator))
    root = write_run(tmp_path / "run", rubric=rubric, datapoints=dps, responses=resps, evaluations=evals)
    return analyze(load_run(root), OPTIONS, human_labels=[]).summary


def _judge(level: str, every: str | None = None, k_other: int = 0) -> list[Any]:
    """A judge's records: ``level`` on correctness, ``every`` on the first ``k_other`` datapoints."""
    return [("llm_judge", {"correctness": every if every and k < k_other else level}) for k in range(N_DATAPOINTS)]


def _rate(evaluator: str, factor: str, passed: int) -> list[Any]:
    """A check's records: passes on the first ``passed`` datapoints."""
    return [(evaluator, {factor: 1.0 if k < passed else 0.0}) for k in range(N_DATAPOINTS)]


def _assert_on_the_unit_scale(summary: dict[str, Any]) -> None:
    for row in leaderboard(summary)["rows"]:
        values = [row["headline"], *row["headline_ci"]]
        for cell in row["evidence"].values():
            values += [cell["score"], *cell["ci"]]
        assert all(v is None or 0.0 <= v <= 1.0 for v in values), row


def test_code_task_is_ranked_by_its_tests_not_by_the_judges_or_bleu(tmp_path: Path) -> None:
    # both judges and a BLEU gold score favour the student whose code fails every test
    failing = {"judge-a": _judge("High"), "judge-b": _judge("High", "Medium", 3),
               "python_tests": _rate("python_tests", "pass@1", 0), "gold": [("gold", {"gold": 0.9})] * N_DATAPOINTS}
    passing = {"judge-a": _judge("Medium", "High", 4), "judge-b": _judge("Medium"),
               "python_tests": _rate("python_tests", "pass@1", N_DATAPOINTS),
               "gold": [("gold", {"gold": 0.2})] * N_DATAPOINTS}
    s = _run(tmp_path, {"correctness": "The code is correct."}, {"fails": failing, "passes": passing})
    board = leaderboard(s)
    rows = {r["student"]: r for r in board["rows"]}
    assert [r["student"] for r in board["rows"]] == ["passes", "fails"]
    assert rows["passes"]["rank_range"] == [1, 1] and rows["fails"]["rank_range"] == [2, 2]
    assert board["tiers_line"] == "passes; then fails"
    # the judges did favour the failing student, and so did BLEU: the tests decide
    assert rows["fails"]["evidence"]["judged"]["score"] > rows["passes"]["evidence"]["judged"]["score"]
    assert rows["passes"]["evidence"]["pass@1"]["score"] == 1.0 and rows["fails"]["evidence"]["pass@1"]["score"] == 0.0
    # gold the rubric does not ask for is shown beside the ranking, not counted
    columns = {c["key"]: c for c in board["columns"]}
    assert columns["gold"]["in_headline"] is False and columns["pass@1"]["in_headline"] is True
    assert rows["fails"]["evidence"]["gold"]["score"] == pytest.approx(0.9)
    assert board["combined"] == "Headline = judged factors 50%, tests passed (pass@1) 50%; gold shown beside it, not counted."
    # equal weights by default: half the judged score, half the pass rate
    for r in rows.values():
        judged = r["evidence"]["judged"]["score"]
        assert r["headline"] == pytest.approx((judged + r["evidence"]["pass@1"]["score"]) / 2, abs=1e-5)
    assert s["students"]["passes"]["headline_score"] == rows["passes"]["headline"]
    _assert_on_the_unit_scale(s)


def test_check_only_task_is_ranked_by_its_pass_rates_with_the_declared_weights(tmp_path: Path) -> None:
    rubric = {"mentions": {"evaluator": "contains", "params": {"value": "x"}, "weight": 3},
              "short": {"evaluator": "max_words", "params": {"limit": 5}}}
    scores = {
        "a": {"contains": _rate("contains", "mentions", 12), "max_words": _rate("max_words", "short", 0)},
        "b": {"contains": _rate("contains", "mentions", 6), "max_words": _rate("max_words", "short", 12)},
        "c": {"contains": _rate("contains", "mentions", 3), "max_words": _rate("max_words", "short", 3)},
    }
    s = _run(tmp_path, rubric, scores)
    board = leaderboard(s)
    got = {r["student"]: r["headline"] for r in board["rows"]}
    # (3 * mentions + 1 * short) / 4
    assert got == {"a": pytest.approx(0.75), "b": pytest.approx(0.625), "c": pytest.approx(0.25)}
    assert [r["student"] for r in board["rows"]] == ["a", "b", "c"]
    assert [c["key"] for c in board["columns"]] == ["checks"]  # no judge: no judged column
    assert {r["student"]: r["evidence"]["checks"]["score"] for r in board["rows"]} == {
        "a": pytest.approx(0.5), "b": pytest.approx(0.75), "c": pytest.approx(0.25)}  # fmt: skip
    assert board["combined"] == "Headline = check mentions 75%, check short 25%."
    assert s["judges"] == {} or all(v.get("weight") in (None, 0.0) for v in s["judges"].values())
    _assert_on_the_unit_scale(s)


def test_mixed_task_weights_the_judged_part_and_the_check_as_declared(tmp_path: Path) -> None:
    rubric = {"correctness": {"description": "Right.", "weight": 1},
              "format": {"evaluator": "regex", "params": {"pattern": "x"}, "weight": 3}}
    scores = {
        "good_format": {"judge-a": _judge("Medium", "High", 2), "judge-b": _judge("Medium", "Low", 2),
                        "regex": _rate("regex", "format", 12)},
        "good_content": {"judge-a": _judge("High"), "judge-b": _judge("High", "Medium", 2),
                         "regex": _rate("regex", "format", 3)},
    }
    s = _run(tmp_path, rubric, scores)
    rows = {r["student"]: r for r in leaderboard(s)["rows"]}
    for name, rate in (("good_format", 1.0), ("good_content", 0.25)):
        judged = rows[name]["evidence"]["judged"]["score"]
        assert rows[name]["evidence"]["checks"]["score"] == pytest.approx(rate)
        assert rows[name]["headline"] == pytest.approx((1 * judged + 3 * rate) / 4, abs=1e-5)
    assert rows["good_content"]["evidence"]["judged"]["score"] > rows["good_format"]["evidence"]["judged"]["score"]
    assert rows["good_format"]["rank"] == 1  # the check weighs three times the judges
    assert s["leaderboard"]["combined"] == "Headline = judged factors 25%, check format 75%."
    _assert_on_the_unit_scale(s)


def test_only_the_judges_factors_count_as_labels_to_add(tmp_path: Path) -> None:
    """A person labels the judged factors; checks and tests are scored without anyone, so the
    'about N more labels' estimate counts one label per answer here, not three."""
    from coeval_analysis.labels.reference_judge import labellable_factors
    from coeval_analysis.stats.scores import ScoreModel

    rubric = {"correctness": "Right.", "format": {"evaluator": "regex", "params": {"pattern": "x"}},
              "short": {"evaluator": "max_words", "params": {"limit": 5}}}
    dps = [datapoint("t", "teacher", k) for k in range(3)]
    resps = [response(dp, "s") for dp in dps]
    evals = [evaluation(r, "judge-a", {"correctness": "High"}) for r in resps]
    evals += [evaluation(r, "regex", {"format": 1.0}, evaluator="regex") for r in resps]
    data = load_run(write_run(tmp_path / "run", rubric=rubric, datapoints=dps, responses=resps, evaluations=evals))
    assert labellable_factors(data, ScoreModel.build(data)) == 1


def test_tiers_cut_only_where_everyone_above_is_told_apart_from_everyone_below() -> None:
    from coeval_analysis.leaderboard import tiers_line, tiers_of

    order = ["A", "B", "C", "D", "E"]
    apart = {("A", x): True for x in "BCDE"} | {(x, "E"): True for x in "BCD"}
    assert tiers_line(tiers_of(order, apart)) == "A; then B, C and D, not separable; then E"
    # B above C, C not told apart from A: no cut may put A alone above C
    chain = {("A", "B"): True, ("B", "C"): True}
    assert tiers_of(["A", "B", "C"], chain) == [["A", "B", "C"]]
    assert tiers_line([["A"]]) == "A"


def test_gold_counts_when_the_rubric_names_it(tmp_path: Path) -> None:
    gold = {"a": [("gold", {"gold": 1.0 if k < 9 else 0.0}) for k in range(N_DATAPOINTS)],
            "b": [("gold", {"gold": 1.0 if k < 3 else 0.0}) for k in range(N_DATAPOINTS)]}
    scores = {s: {"contains": _rate("contains", "mentions", 6), "gold": gold[s]} for s in ("a", "b")}
    rubric = {"mentions": {"evaluator": "contains", "params": {"value": "x"}}, "gold": {"weight": 2}}
    board = leaderboard(_run(tmp_path, rubric, scores))
    rows = {r["student"]: r["headline"] for r in board["rows"]}
    assert rows == {"a": pytest.approx((0.5 + 2 * 0.75) / 3), "b": pytest.approx((0.5 + 2 * 0.25) / 3)}
    assert {c["key"]: c["in_headline"] for c in board["columns"]} == {"checks": True, "gold": True}


def test_judged_factors_of_weight_zero_are_shown_and_not_counted(tmp_path: Path) -> None:
    rubric = {"correctness": {"description": "Right.", "weight": 0},
              "format": {"evaluator": "regex", "params": {"pattern": "x"}}}
    scores = {
        "a": {"judge-a": _judge("High"), "judge-b": _judge("High", "Medium", 2), "regex": _rate("regex", "format", 3)},
        "b": {"judge-a": _judge("Low", "Medium", 2), "judge-b": _judge("Low"), "regex": _rate("regex", "format", 9)},
    }
    board = leaderboard(_run(tmp_path, rubric, scores))
    assert {r["student"]: r["headline"] for r in board["rows"]} == {"a": pytest.approx(0.25), "b": pytest.approx(0.75)}
    assert {c["key"]: c["in_headline"] for c in board["columns"]} == {"judged": False, "checks": True}


@pytest.mark.slow
def test_the_issue_run_a_code_task_with_a_reference_column_and_a_judge_grading_both_high(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run as a user builds it: ``checker: python_tests``, ``data:`` with a ``reference``
    column (which adds a BLEU gold score nobody asked for), a judge that grades every answer
    High. The student whose code passes every test is first; BLEU, which favours the other
    (its code is the reference's text), is shown beside the ranking."""
    import json

    from coeval.plugins.config_loading import load_config
    from coeval.run.options import RunOptions
    from coeval.run.runner import run_experiment

    monkeypatch.chdir(tmp_path)
    wrong, right = "def add(a, b):\n    return a * b\n", "def add(a, b):\n    return a + b\n"
    rows = [{"q": f"Write add(a, b) ({k}).", "tests": f"def check(f):\n    assert f({k}, 3) == {k + 3}\n",
             "entry": "add", "ref": wrong} for k in range(10)]  # fmt: skip
    (tmp_path / "code.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    raw = {
        "models": [
            {"name": "fails", "interface": "mock", "roles": ["student"], "parameters": {"replies": {"add(a, b)": wrong}}},
            {"name": "passes", "interface": "mock", "roles": ["student"], "parameters": {"replies": {"add(a, b)": right}}},
            {"name": "judge", "interface": "mock", "roles": ["judge"], "parameters": {"judge": {"flat": "High"}}},
        ],
        "tasks": [{"name": "code", "description": "Write the function.", "checker": "python_tests",
                   "data": {"file": "code.jsonl", "prompt": "q", "tests": "tests", "entry_point": "entry",
                            "reference": "ref"},
                   "rubric": {"correctness": "The function is correct."}}],
        "experiment": {"id": "k", "storage_folder": "runs", "probe_mode": "disable"},
    }
    monkeypatch.setenv("COEVAL_ALLOW_UNSANDBOXED_CODE", "1")
    assert run_experiment(load_config(raw, check_filesystem=False), RunOptions(progress=False)).exit_code == 0
    summary = analyze(load_run(tmp_path / "runs" / "k"), OPTIONS).summary
    board = leaderboard(summary)
    rows_by = {r["student"]: r for r in board["rows"]}
    assert [r["student"] for r in board["rows"]] == ["passes", "fails"]
    assert rows_by["passes"]["rank_range"] == [1, 1]
    assert rows_by["passes"]["evidence"]["pass@1"]["score"] == 1.0 and rows_by["fails"]["evidence"]["pass@1"]["score"] == 0.0
    columns = {c["key"]: c["in_headline"] for c in board["columns"]}
    assert columns["gold"] is False and columns["pass@1"] is True and columns["judged"] is True
    assert rows_by["fails"]["evidence"]["gold"]["score"] > rows_by["passes"]["evidence"]["gold"]["score"]
    _assert_on_the_unit_scale(summary)


@pytest.mark.parametrize(("weight_a", "first"), [(3, "strong_on_a"), (0.2, "strong_on_b")])
def test_judged_factors_weigh_as_declared_inside_the_judges_scores(
    tmp_path: Path, weight_a: float, first: str
) -> None:
    rubric = {"a": {"description": "First criterion.", "weight": weight_a}, "b": "Second criterion."}

    def judge(a: str, b: str, other: str, k_other: int) -> list[Any]:
        return [("llm_judge", {"a": other if k < k_other else a, "b": b}) for k in range(N_DATAPOINTS)]

    scores = {
        "strong_on_a": {"judge-a": judge("High", "Low", "Medium", 2), "judge-b": judge("High", "Low", "Medium", 1)},
        "strong_on_b": {"judge-a": judge("Low", "High", "Medium", 1), "judge-b": judge("Low", "High", "Medium", 2)},
        "middling": {"judge-a": judge("Medium", "Medium", "Low", 3), "judge-b": judge("Medium", "Medium", "High", 3)},
    }
    board = leaderboard(_run(tmp_path, rubric, scores))
    assert board["rows"][0]["student"] == first
    assert board["combined"] == "Headline = the judges' scores through the measurement model."


def test_a_judged_part_on_too_few_datapoints_separates_no_one(tmp_path: Path) -> None:
    # 12 checked datapoints, but the judges graded only 6: too few for the judged part's own
    # resamples, so its difference between the two students is of unknown certainty and
    # must not be called determined by holding it fixed while the checks are resampled
    judged_on = 6

    def judge(level: str) -> list[Any]:
        return [("llm_judge", {"correctness": level}) if k < judged_on else None for k in range(N_DATAPOINTS)]

    rubric = {"correctness": {"description": "Right."},
              "format": {"evaluator": "regex", "params": {"pattern": "x"}}}
    scores = {
        "a": {"judge-a": judge("High"), "judge-b": judge("High"), "regex": _rate("regex", "format", 6)},
        "b": {"judge-a": judge("Medium"), "judge-b": judge("High"), "regex": _rate("regex", "format", 6)},
    }
    s = _run(tmp_path, rubric, scores)
    board = leaderboard(s)
    assert {r["student"]: r["rank_range"] for r in board["rows"]} == {"a": [1, 2], "b": [1, 2]}
    assert all(r["headline_ci"] == [None, None] for r in board["rows"])
    assert all(not c.get("ci") or c["ci"][0] is None or c["ci"][0] != c["ci"][1] for c in s["comparisons"])
