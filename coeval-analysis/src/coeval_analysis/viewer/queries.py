"""The viewer's questions, as parameterised SQL over a :class:`RunStore`.

Filters arrive from the URL; each one becomes a bound parameter (never text pasted into
SQL). Every list is paginated.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, cast

import attrs

from coeval_analysis.viewer.build import DATAPOINT_SUMMARY
from coeval_analysis.viewer.outline import analysis_ranking
from coeval_analysis.viewer.rowsql import GAP_SQL, datapoint_rows_sql, sample_sql
from coeval_analysis.viewer.store import RunStore

__all__ = ["FILTERS", "PAGE_SIZE", "Filters", "datapoint_detail", "datapoint_table", "facets", "ranking"]

PAGE_SIZE = 50
FACET_LIMIT = 200
#: URL parameter -> column of ``judgments``.
FILTERS: dict[str, str] = {
    "task": "task_id",
    "teacher": "teacher_model_id",
    "student": "student_model_id",
    "judge": "judge_model_id",
    "factor": "factor",
    "status": "status",
    "score": "score",
}
SORTS = ("id", "disagreement", "gap")


@attrs.frozen
class Filters:
    """What the start page was asked for: column filters, a sort, a page."""

    where: Mapping[str, str] = attrs.field(factory=dict)
    sort: str = "id"
    student_a: str = ""
    student_b: str = ""
    page: int = 1

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> Filters:
        where = {k: v for k, v in query.items() if k in FILTERS and v}
        sort = query.get("sort", "id")
        try:
            page = max(1, int(query.get("page", "1")))
        except ValueError:
            page = 1
        return cls(where, sort if sort in SORTS else "id", query.get("a", ""), query.get("b", ""), page)

    def sql(self) -> tuple[str, list[Any]]:
        """``WHERE ...`` over ``judgments`` and its parameters."""
        if not self.where:
            return "", []
        parts = [f"{FILTERS[k]} = ?" for k in self.where]
        return " WHERE " + " AND ".join(parts), list(self.where.values())


def ranking(store: RunStore, filters: Filters | None = None) -> list[dict[str, Any]]:
    """The run's leaderboard (:class:`~coeval_analysis.viewer.outline.LeaderboardRows`) when
    its last ``coeval analyze`` is current and no filter is set: the one ranking every
    surface shows. Else students by mean score (Low 0, Medium 0.5, High 1) over ok
    judgments, following the filters."""
    if filters is None or not filters.where:
        board = analysis_ranking(store.run)
        if board:
            return cast("list[dict[str, Any]]", board)  # LeaderboardRows: the cells every surface prints
    where, params = (filters or Filters()).sql()
    cond = " AND value IS NOT NULL" if where else " WHERE value IS NOT NULL"
    return store.query_dicts(
        f"SELECT student_model_id AS student, avg(value) AS mean, count(*) AS n, "
        f"count(DISTINCT datapoint_id) AS datapoints FROM judgments{where}{cond} "
        "GROUP BY 1 ORDER BY mean DESC, student",
        params,
        judgments_only=True,
    )


def facets(store: RunStore) -> dict[str, list[str]]:
    """The values each filter can take (for the filter menus; at most :data:`FACET_LIMIT`
    each: metric scores are numbers, and a menu of thousands helps nobody)."""
    out: dict[str, list[str]] = {}
    for key, column in FILTERS.items():
        rows = store.query(
            f"SELECT DISTINCT {column} FROM judgments WHERE {column} IS NOT NULL ORDER BY 1 LIMIT {FACET_LIMIT}",
            judgments_only=True,
        )
        out[key] = [str(r[0]) for r in rows]
    return out


#: how long the unfiltered datapoint table waits for the build to store it (the step right
#: after the judgments), rather than working it out a second time beside the build
SUMMARY_WAIT_S = 5.0


def _stored_summary(store: RunStore) -> bool:
    """Whether the stored datapoint table can answer, waiting for it while it is being made."""
    deadline = time.monotonic() + SUMMARY_WAIT_S
    while not store.has_table(DATAPOINT_SUMMARY):
        if store.ready or time.monotonic() > deadline:
            return store.has_table(DATAPOINT_SUMMARY)
        time.sleep(0.02)
    return True


def datapoint_table(store: RunStore, filters: Filters) -> tuple[list[dict[str, Any]], int]:
    """One row per datapoint matching the filters: judgments, mean score, disagreement
    (mean over answer x factor of the judges' standard deviation) and, when two students
    are chosen, their score gap. Returns the page's rows and the total row count.

    Unfiltered and not sorted by gap, the rows come from the table the build stored."""
    where, params = filters.sql()
    with_gap = bool(filters.student_a and filters.student_b)
    order = {
        "id": "datapoint_id",
        "disagreement": "disagreement DESC NULLS LAST, datapoint_id",
        "gap": "abs(gap) DESC NULLS LAST, datapoint_id",
    }[filters.sort]
    if not where and not with_gap and _stored_summary(store):
        source, bound = DATAPOINT_SUMMARY, []
    else:
        source = f"({datapoint_rows_sql(where, GAP_SQL if with_gap else 'NULL')})"
        # the gap's two parameters come first in the text (the outer SELECT), then the filters'
        bound = [*([filters.student_a, filters.student_b] if with_gap else []), *params]
    sql = f"SELECT *, count(*) OVER () AS total FROM {source} ORDER BY {order} LIMIT ? OFFSET ?"
    rows = store.query_dicts(sql, [*bound, PAGE_SIZE, (filters.page - 1) * PAGE_SIZE], judgments_only=True)
    total = int(rows[0]["total"]) if rows else 0
    return rows, total


def datapoint_detail(store: RunStore, datapoint_id: str) -> dict[str, Any] | None:
    """The teacher's item, every student's answer and every judge's record of it."""
    found = store.query_dicts("SELECT * FROM datapoints WHERE id = ?", [datapoint_id])
    responses = store.query_dicts(
        f"SELECT * FROM responses WHERE datapoint_id = ? ORDER BY student_model_id, {sample_sql('id')}", [datapoint_id]
    )
    evals = store.query_dicts(
        f"SELECT * FROM evals WHERE datapoint_id = ? ORDER BY student_model_id, {sample_sql('response_id')}, "
        "judge_model_id, id",
        [datapoint_id],
    )
    if not found and not responses and not evals:
        return None
    return {"datapoint": found[0] if found else {"id": datapoint_id}, "responses": responses, "evals": evals}
