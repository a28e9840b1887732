"""The SQL of the datapoint table (one row per datapoint over ``judgments``), shared by the
build (which stores the unfiltered table) and the start page's queries (filtered ones)."""

from __future__ import annotations

__all__ = ["GAP_SQL", "datapoint_rows_sql", "sample_sql"]

#: the score gap between two students (bound as two parameters)
GAP_SQL = "avg(value) FILTER (WHERE student_model_id = ?) - avg(value) FILTER (WHERE student_model_id = ?)"


def sample_sql(response_id: str) -> str:
    """Which sample of the student's answers a response is (1, 2, ...): ``samples: k`` gives
    answers 2..k the id suffix ``__sample{n}``."""
    return (f"coalesce(TRY_CAST(regexp_extract({response_id}, '__sample([0-9]+)$', 1) AS INTEGER), 1)")


def datapoint_rows_sql(where: str = "", gap: str = "NULL") -> str:
    """One row per datapoint of ``judgments{where}``: its judgments, failures, mean score,
    disagreement (mean over answer x factor of the judges' standard deviation) and ``gap``."""
    inner = (
        "SELECT datapoint_id, response_id, factor, any_value(task_id) AS task_id, "
        "any_value(teacher_model_id) AS teacher_model_id, any_value(student_model_id) AS student_model_id, "
        "count(factor) AS n, sum(CASE WHEN status <> 'ok' THEN 1 ELSE 0 END) AS failed, avg(value) AS value, "
        f"stddev_pop(value) AS sd FROM judgments{where} GROUP BY datapoint_id, response_id, factor"
    )
    return (
        "SELECT datapoint_id, any_value(task_id) AS task, any_value(teacher_model_id) AS teacher, "
        "sum(n) AS judgments, sum(failed) AS failed, avg(value) AS mean, avg(sd) AS disagreement, "
        f"{gap} AS gap FROM ({inner}) GROUP BY datapoint_id"
    )
