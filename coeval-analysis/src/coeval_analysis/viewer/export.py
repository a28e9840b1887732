"""``coeval export``: every judgment of a run as one tidy table, written by DuckDB."""

from __future__ import annotations

from pathlib import Path

from coeval.storage.safe_files import apply_file_mode

from coeval_analysis.csv_safety import neutralise_sql
from coeval_analysis.viewer.store import RunStore

__all__ = ["FORMATS", "export_judgments"]

FORMATS = ("parquet", "csv", "jsonl")
_COPY_OPTIONS = {"parquet": "FORMAT parquet", "csv": "FORMAT csv, HEADER true", "jsonl": "FORMAT json"}

#: One row per evaluation and factor (a failed evaluation: one row without factor).
TIDY_SQL = (
    "SELECT j.datapoint_id, j.response_id, j.id AS evaluation_id, j.task_id AS task, j.teacher_model_id AS teacher, "
    "j.student_model_id AS student, j.judge_model_id AS judge, j.factor, j.score, j.value, j.status, "
    "e.rationale ->> j.factor AS rationale, e.raw, e.latency_ms, e.cost_usd, e.error "
    "FROM judgments j JOIN evals e ON e.id = j.id ORDER BY j.id, j.factor"
)


def _csv_safe(store: RunStore) -> str:
    """The tidy table with text cells that a spreadsheet would run as formulas prefixed by
    ``'`` (:mod:`coeval_analysis.csv_safety`)."""
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
