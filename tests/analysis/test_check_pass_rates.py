"""The analysis reports the deterministic checks' pass rates per student, with Wilson
intervals, beside the judge factors (summary, tables/checks.csv and the report section)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from coeval.config import load_config
from coeval.run_options import RunOptions
from coeval.runner import run_experiment
from coeval_analysis import analyze, load_run
from coeval_analysis.pass_rates import wilson_interval
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
