"""The report's "Checks and tests" section: pass rates of deterministic checks and of code
run against its tests, per student, with intervals (:mod:`coeval_analysis.ranking.pass_rates`)."""

from __future__ import annotations

from typing import Any

from coeval_analysis.reports.blocks import Section, Table

__all__ = ["checks_section"]


def checks_section(p: Any) -> Section | None:
    table = p.tables.get("checks")
    if table is None or not len(table):
        return None
    rows = [{**r, "ci": f"{r['ci_low']:.2f}–{r['ci_high']:.2f}"} for r in table.to_dict("records")]
    return Section(
        "checks",
        "Checks and tests",
        f"Rubric factors scored without a judge by a deterministic check (contains, regex, json_schema, "
        f"max_words, your own python function...) or by running the answer's code against the task's tests "
        f"(python_tests). Each response passes (1) or fails (0); the pass rate per student comes with a "
        f"{p.pct} Wilson interval. With several samples per datapoint, pass@k is the unbiased estimate that "
        f"one of k samples passes, averaged over datapoints (bootstrap interval). These factors count in the "
        f"student score like the judge factors.",
        [Table([("task", "task"), ("factor", "factor"), ("evaluator", "check"), ("student", "student"),
                ("passed", "passed"), ("n", "responses"), ("pass_rate", "pass rate"), ("ci", f"{p.pct} interval")],
               rows)],
    )
