"""``coeval export``: every judgment of a run as one tidy table, written by DuckDB."""

from __future__ import annotations

import json
from pathlib import Path

from coeval.storage.safe_files import apply_file_mode

from coeval_analysis.output.csv_safety import neutralise_arrow, neutralise_sql
from coeval_analysis.viewer.rowsql import sample_sql
from coeval_analysis.viewer.store import RunStore

__all__ = ["FORMATS", "export_judgments", "export_leaderboard", "leaderboard_path"]

FORMATS = ("parquet", "csv", "jsonl")
_COPY_OPTIONS = {"parquet": "FORMAT parquet", "csv": "FORMAT csv, HEADER true", "jsonl": "FORMAT json"}

#: One row per evaluation and factor (a failed evaluation: one row without factor). ``level``
#: is the judge's word (High, Medium, Low; empty for a number), ``score`` its value on [0, 1];
#: ``sample`` / ``samples``: which of a student's answers to the datapoint (``samples: k``);
#: ``test_status`` / ``test_error``: a code test's outcome (passed, failed, timeout, error).
TIDY_SQL = (
    f"SELECT j.datapoint_id, j.response_id, {sample_sql('j.response_id')} AS sample, "
    f"max({sample_sql('j.response_id')}) OVER (PARTITION BY j.datapoint_id, j.student_model_id) AS samples, "
    "j.id AS evaluation_id, j.task_id AS task, j.teacher_model_id AS teacher, "
    "j.student_model_id AS student, j.judge_model_id AS judge, j.factor, "
    "CASE WHEN lower(j.score) IN ('high', 'medium', 'low') THEN j.score END AS level, j.value AS score, j.status, "
    "e.execution ->> 'status' AS test_status, e.execution ->> 'error' AS test_error, "
    "e.rationale ->> j.factor AS rationale, e.raw, e.latency_ms, e.cost_usd, e.error "
    "FROM judgments j JOIN evals e ON e.id = j.id ORDER BY j.id, j.factor"
)


def _csv_safe(store: RunStore) -> str:
    """The tidy table with text cells that a spreadsheet would run as formulas prefixed by
    ``'`` (:mod:`coeval_analysis.output.csv_safety`)."""
    text = [name for name, kind, *_ in store.query(f"DESCRIBE {TIDY_SQL}") if str(kind) == "VARCHAR"]
    if not text:
        return TIDY_SQL
    replaced = ", ".join(f'{neutralise_sql(f"t.{_quoted(n)}")} AS {_quoted(n)}' for n in text)
    return f"SELECT * REPLACE ({replaced}) FROM ({TIDY_SQL}) t"


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def export_judgments(store: RunStore, fmt: str, out: Path) -> int:
    """Write the tidy table to ``out``; returns its row count."""
    out.parent.mkdir(parents=True, exist_ok=True)
    target = str(out).replace("'", "''")
    select = _csv_safe(store) if fmt == "csv" else TIDY_SQL
    store.query(f"COPY ({select}) TO '{target}' ({_COPY_OPTIONS[fmt]})")
    apply_file_mode(out)  # judgments hold prompts and answers: owner only, as in the run folder
    return int(store.query("SELECT count(*) FROM judgments")[0][0])


def leaderboard_path(out: Path) -> Path:
    """Where the leaderboard goes beside the judgments: ``judgments.csv`` -> ``judgments.leaderboard.csv``."""
    return out.with_name(f"{out.stem}.leaderboard{out.suffix}")


def export_leaderboard(run: Path, fmt: str, out: Path) -> Path | None:
    """The run's current leaderboard (the console's columns: rank range, student, headline
    and interval, one column per kind of evidence, rounded as shown) beside ``out``; None
    when the run has no current ``coeval analyze``."""
    import pyarrow as pa
    import pyarrow.csv as pa_csv
    import pyarrow.parquet as pq

    from coeval_analysis.leaderboard import leaderboard
    from coeval_analysis.viewer.outline import analysis_summary

    summary = analysis_summary(run)
    try:
        board = leaderboard(summary) if summary is not None else None
    except (ValueError, KeyError, TypeError):
        board = None
    if board is None:
        return None

    def rounded(value: object) -> float | None:
        return round(float(value), 3) if isinstance(value, int | float) and not isinstance(value, bool) else None

    keys = [c["key"] for c in board["columns"]]
    rows = []
    for r in board["rows"]:
        low, high = (r["headline_ci"] or [None, None])[:2]
        row: dict[str, object] = {"rank_range": r["rank_label"], "student": r["student"],
                                  "headline": rounded(r["headline"]), "ci_low": rounded(low), "ci_high": rounded(high)}
        row.update({k: rounded(r["evidence"][k]["score"]) if k in r["evidence"] else None for k in keys})
        rows.append(row)
    columns = ["rank_range", "student", "headline", "ci_low", "ci_high", *keys]
    table = pa.table({c: [row[c] for row in rows] for c in columns})
    target = leaderboard_path(out)
    if fmt == "parquet":
        pq.write_table(table, target)
    elif fmt == "csv":
        pa_csv.write_csv(neutralise_arrow(table), target)
    else:
        target.write_text("".join(json.dumps(row) + "\n" for row in table.to_pylist()), encoding="utf-8")
    apply_file_mode(target)
    return target
