"""Pass rates of the deterministic checks (contains, regex, json_schema, ...) and of code run
against its tests, per student, with Wilson score intervals.

A check scores a response 1 (passed) or 0 (failed) on a rubric factor. The pass rate of a
student on a factor is the share of their scored responses that passed; its interval is the
Wilson score interval at the analysis level, which stays inside [0, 1] and is sensible at
0 % and 100 % (a plain normal interval would have width 0 there). These factors also count
in the student score like any other factor; this table shows them on their own, beside the
judge factors.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import pandas as pd

from coeval.answer_checks.functions import CHECK_NAMES
from coeval_analysis.data import RunData

__all__ = ["PASS_FAIL_EVALUATORS", "pass_rate_table", "pass_rate_summary", "wilson_interval"]

#: Evaluators whose scores are pass (1) / fail (0) verdicts.
PASS_FAIL_EVALUATORS = (*CHECK_NAMES, "python_tests")
COLUMNS = ["evaluator", "task", "factor", "student", "passed", "n", "pass_rate", "ci_low", "ci_high"]


def wilson_interval(passed: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of ``passed`` successes in ``n`` trials."""
    if n <= 0:
        return (math.nan, math.nan)
    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = passed / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def pass_rate_table(data: RunData, level: float = 0.95) -> pd.DataFrame:
    """One row per (evaluator, task, factor, student): passed, n, pass_rate and interval."""
    units = data.units
    if units.empty:
        return pd.DataFrame(columns=COLUMNS)
    mine = units[units["evaluator"].astype(str).isin(PASS_FAIL_EVALUATORS)]
    if mine.empty:
        return pd.DataFrame(columns=COLUMNS)
    frame = pd.DataFrame({
        "evaluator": mine["evaluator"].astype(str),
        "task": mine["task"].astype(str),
        "factor": mine["factor"].astype(str),
        "student": mine["student"].astype(str),
        "passed": (mine["value"].astype(float) >= 0.5).astype(int),
    })
    grouped = frame.groupby(["evaluator", "task", "factor", "student"], sort=True)["passed"].agg(["sum", "size"])
    rows = []
    for (evaluator, task, factor, student), r in grouped.iterrows():
        passed, n = int(r["sum"]), int(r["size"])
        low, high = wilson_interval(passed, n, level)
        rows.append({"evaluator": evaluator, "task": task, "factor": factor, "student": student, "passed": passed,
                     "n": n, "pass_rate": passed / n, "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows, columns=COLUMNS)


def pass_rate_summary(table: pd.DataFrame) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
    """``{task: {factor: {student: {pass_rate, ci: [low, high], passed, n, evaluator}}}}``."""
    out: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for r in table.to_dict("records"):
        out.setdefault(str(r["task"]), {}).setdefault(str(r["factor"]), {})[str(r["student"])] = {
            "evaluator": r["evaluator"], "pass_rate": r["pass_rate"], "ci": [r["ci_low"], r["ci_high"]],
            "passed": r["passed"], "n": r["n"],
        }
    return out
