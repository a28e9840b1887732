"""The analysis reports the deterministic checks' pass rates per student, with Wilson
intervals, beside the judge factors (summary, tables/checks.csv and the report section)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from coeval.plugins.config_loading import load_config
from coeval.run.options import RunOptions
from coeval.run.runner import run_experiment
from coeval_analysis import analyze, load_run
from coeval_analysis.ranking.pass_rates import wilson_interval
from coeval_analysis.reports.html import write_html
from coeval_analysis.reports.tables import write_tables


def test_wilson_interval_known_values() -> None:
    low, high = wilson_interval(3, 3)
    assert (round(low, 4), high) == (0.4385, 1.0)
    low, high = wilson_interval(0, 3)
    assert (low, round(high, 4)) == (0.0, 0.5615)
    low, high = wilson_interval(5, 10)
    assert (round(low, 4), round(high, 4)) == (0.2366, 0.7634)
    assert all(math.isnan(v) for v in wilson_interval(0, 0))


@pytest.fixture
def checked_run(tmp_path: Path) -> Path:
    def student(name: str, answer: str) -> dict[str, object]:
        return {"name": name, "interface": "mock", "roles": ["student"], "parameters": {"replies": {"": answer}}}

    raw = {
        "models": [
            {"name": "teacher", "interface": "mock", "roles": ["teacher", "judge"]},
            student("wordy", "Your refund is ready now."),
            student("terse", "No refund."),
            student("silent", "No."),
        ],
        "tasks": [{
            "name": "support",
            "description": "Answer a customer.",
            "target_attributes": {"topic": ["billing"]},
            "nuanced_attributes": {},
            "sampling": {"total": 4},
            "rubric": {
                "helpful": "The answer helps.",
                "mentions_refund": {"evaluator": "contains", "params": {"value": "refund"}},
                "short": {"evaluator": "max_words", "params": {"limit": 3}},
            },
        }],
        "experiment": {"id": "checks", "storage_folder": str(tmp_path / "runs"), "probe_mode": "disable"},
    }
    config = load_config(raw, check_filesystem=False)
    assert run_experiment(config, RunOptions(progress=False)).exit_code == 0
    return tmp_path / "runs" / "checks"


def test_pass_rates_per_student_beside_the_judge_factors(checked_run: Path, tmp_path: Path) -> None:
    analysis = analyze(load_run(checked_run))
    checks = analysis.summary["checks"]["support"]
    assert set(checks) == {"mentions_refund", "short"}  # the judged factor is not a check
    rates = {f: {s: (v["passed"], v["n"]) for s, v in by.items()} for f, by in checks.items()}
    assert rates == {
        "mentions_refund": {"wordy": (4, 4), "terse": (4, 4), "silent": (0, 4)},
        "short": {"wordy": (0, 4), "terse": (4, 4), "silent": (4, 4)},
    }
    assert checks["short"]["terse"]["ci"] == pytest.approx(list(wilson_interval(4, 4)))
    assert checks["short"]["wordy"]["evaluator"] == "max_words"
    # the judge factor is still scored and reported as before
    assert set(analysis.summary["judges"]) == {"teacher"}
    assert {"contains", "max_words"} <= set(analysis.summary["evaluator_records"])
    (tmp_path / "report").mkdir()
    html = (write_html(analysis, tmp_path / "report")[0]).read_text()
    assert "Checks and tests" in html and "mentions_refund" in html
    written = write_tables(analysis, tmp_path / "report")
    assert tmp_path / "report" / "tables" / "checks.csv" in written


def test_pass_at_k_estimator_known_values() -> None:
    from coeval_analysis.ranking.pass_rates import pass_at_k

    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)  # 1 - C(3,2)/C(5,2)
    assert pass_at_k(5, 0, 3) == 0.0 and pass_at_k(5, 3, 3) == 1.0 and pass_at_k(4, 1, 1) == 0.25
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_samples_give_pass_at_k_per_student(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    monkeypatch.chdir(tmp_path)
    rows = [{"q": "Write add(a, b).", "tests": "def check(f):\n    assert f(2, 3) == 5\n", "entry": "add"},
            {"q": "Write neg(x).", "tests": "def check(f):\n    assert f(4) == -4\n", "entry": "neg"}]
    (tmp_path / "code.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    right_add, wrong_add = "def add(a, b):\n    return a + b\n", "def add(a, b):\n    return a * b\n"
    right_neg, wrong_neg = "def neg(x):\n    return -x\n", "def neg(x):\n    return x\n"
    raw = {
        "models": [
            # 1 of 3 samples right on add, 0 of 3 on neg
            {"name": "flaky", "interface": "mock", "roles": ["student"],
             "parameters": {"replies": {"add(a, b)": [wrong_add, right_add, wrong_add], "neg(x)": [wrong_neg] * 3}}},
            # always right
            {"name": "solid", "interface": "mock", "roles": ["student"],
             "parameters": {"replies": {"add(a, b)": [right_add] * 3, "neg(x)": [right_neg] * 3}}},
        ],
        "tasks": [{"name": "code", "description": "Write the function.", "checker": "python_tests", "samples": 3,
                   "data": {"file": "code.jsonl", "prompt": "q", "tests": "tests", "entry_point": "entry"},
                   "rubric": {"valid": {"evaluator": "max_words", "params": {"limit": 100}}}}],
        "experiment": {"id": "k", "storage_folder": "runs", "probe_mode": "disable"},
    }
    from coeval.planning import plan_experiment

    config = load_config(raw, check_filesystem=False)
    phases = {p.phase: p.calls for p in plan_experiment(config).phases}
    assert phases["response_collection"] == 12 and phases["evaluation"] == 0  # 2 items x 3 samples x 2 students
    monkeypatch.setenv("COEVAL_ALLOW_UNSANDBOXED_CODE", "1")
    assert run_experiment(config, RunOptions(progress=False)).exit_code == 0
    analysis = analyze(load_run(tmp_path / "runs" / "k"))
    code = analysis.summary["checks"]["code"]
    assert {s: (v["passed"], v["n"]) for s, v in code["pass@1"].items()} == {"flaky": (1, 6), "solid": (6, 6)}
    assert code["pass@3"]["flaky"]["pass_rate"] == pytest.approx(0.5)  # add: 1.0, neg: 0.0
    assert code["pass@3"]["solid"]["pass_rate"] == 1.0 and code["pass@3"]["solid"]["n"] == 2
    # the leaderboard: pass@1 counts (its tests rank the students), pass@3 beside it
    board = analysis.summary["leaderboard"]
    assert {c["key"]: c["in_headline"] for c in board["columns"]} == {"checks": True, "pass@1": True, "pass@3": False}
    rows = {r["student"]: r for r in board["rows"]}
    assert [r["student"] for r in board["rows"]] == ["solid", "flaky"]
    assert rows["flaky"]["evidence"]["pass@1"]["score"] == pytest.approx(1 / 6)
    assert rows["flaky"]["evidence"]["pass@3"]["score"] == pytest.approx(0.5)
