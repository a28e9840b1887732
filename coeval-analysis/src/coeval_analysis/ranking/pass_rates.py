"""Pass rates of the deterministic checks (contains, regex, json_schema, ...) and of code run
against its tests, per student, with Wilson score intervals.

A check scores a response 1 (passed) or 0 (failed) on a rubric factor. The pass rate of a
student on a factor is the share of their scored responses that passed; its interval is the
Wilson score interval at the analysis level, which stays inside [0, 1] and is sensible at
0 % and 100 % (a plain normal interval would have width 0 there). This table shows each
factor on its own; the headline takes the same rates as plain rates (never through the
judges' measurement model), weighted by the rubric (see :mod:`coeval_analysis.ranking.headline_parts`).

With several samples per (datapoint, student) (``samples: k`` in the task), code tasks also
get pass@k: per datapoint the unbiased estimator ``1 - C(n - c, k) / C(n, k)`` of n samples
of which c passed (Chen et al., 2021), averaged over the datapoints, with a percentile
bootstrap interval over datapoints. k is the smallest n of the task, so every datapoint has
at least k samples.
"""

from __future__ import annotations

import math
from math import comb
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd
from coeval.answer_checks.functions import CHECK_NAMES

from coeval_analysis.loading.run_data import RunData

__all__ = [
    "PASS_FAIL_EVALUATORS",
    "pass_at_k",
    "pass_at_k_table",
    "pass_rate_summary",
    "pass_rate_table",
    "wilson_interval",
]
#: the code evaluator, whose per-sample pass@1 scores give pass@k
CODE_EVALUATOR = "python_tests"
BOOTSTRAP_DRAWS = 2000

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
    at_k = pass_at_k_table(data, level)
    table = pd.DataFrame(rows, columns=COLUMNS)
    return pd.concat([table, at_k], ignore_index=True) if len(at_k) else table


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of the chance that at least one of k samples passes, from n
    samples of which c passed."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples, got {n}")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_at_k_table(data: RunData, level: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """pass@k rows (evaluator ``python_tests``, factor ``pass@k``) for the tasks whose
    students answered every datapoint more than once; same columns as the pass rates
    (``passed``: datapoints with at least one passing sample, ``n``: datapoints)."""
    units = data.units
    if units.empty:
        return pd.DataFrame(columns=COLUMNS)
    mine = units[units["evaluator"].astype(str) == CODE_EVALUATOR]
    if mine.empty:
        return pd.DataFrame(columns=COLUMNS)
    frame = pd.DataFrame({"task": mine["task"].astype(str), "datapoint": mine["datapoint"].astype(int),
                          "student": mine["student"].astype(str),
                          "passed": (mine["value"].astype(float) >= 0.5).astype(int)})
    per_item = frame.groupby(["task", "student", "datapoint"])["passed"].agg(["sum", "size"]).reset_index()
    rows = []
    rng = np.random.default_rng(seed)
    for task, of_task in per_item.groupby("task", sort=True):
        k = int(of_task["size"].min())
        if int(of_task["size"].max()) < 2 or k < 2:
            continue
        for student, g in of_task.groupby("student", sort=True):
            values = np.array([pass_at_k(int(n), int(c), k) for n, c in zip(g["size"], g["sum"], strict=True)])
            draws = rng.integers(0, len(values), size=(BOOTSTRAP_DRAWS, len(values)))
            means = values[draws].mean(axis=1)
            low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
            rows.append({"evaluator": CODE_EVALUATOR, "task": task, "factor": f"pass@{k}", "student": student,
                         "passed": int((g["sum"] > 0).sum()), "n": len(values), "pass_rate": float(values.mean()),
                         "ci_low": float(low), "ci_high": float(high)})
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
