"""One run folder as DuckDB tables: the viewer's only way into the records.

The JSONL files of phases 3-5 are read by DuckDB itself (never record by record in
Python) into a database file in a cache folder, keyed by every file's size and
modification time: the first look at a run builds it, later ones open it at once, and a
run that grew is rebuilt. Pages then ask paginated SQL questions, so the server's memory
stays flat however many records the run has (DuckDB spills to the file past its limit).

Tables: ``datapoints``, ``responses``, ``evals`` (one row per evaluation record, the
last valid per id) and ``judgments`` (one row per evaluation and factor, ``value`` 0 / 0.5
/ 1 for Low / Medium / High; a failed evaluation is one row with no factor). Legacy
records (no ``status``, no ``student_model_id``) get both derived here.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

__all__ = ["RunStore", "cache_folder"]

_CACHE_VERSION = "1"
#: DuckDB's own memory ceiling; past it, it works from the database file.
MEMORY_LIMIT = "512MB"

_DP_COLUMNS = {
    "id": "VARCHAR", "task_id": "VARCHAR", "teacher_model_id": "VARCHAR", "prompt": "VARCHAR",
    "reference_response": "VARCHAR", "sampled_target_attributes": "JSON", "status": "VARCHAR",
    "error": "VARCHAR", "error_kind": "VARCHAR", "raw": "VARCHAR", "attempt_errors": "JSON",
    "latency_ms": "DOUBLE", "cost_usd": "DOUBLE", "generated_at": "VARCHAR",
}
_RESP_COLUMNS = {
    "id": "VARCHAR", "datapoint_id": "VARCHAR", "task_id": "VARCHAR", "teacher_model_id": "VARCHAR",
    "student_model_id": "VARCHAR", "response": "VARCHAR", "status": "VARCHAR", "error": "VARCHAR",
    "error_kind": "VARCHAR", "raw": "VARCHAR", "attempt_errors": "JSON", "latency_ms": "DOUBLE",
    "cost_usd": "DOUBLE", "generated_at": "VARCHAR",
}
_EVAL_COLUMNS = {
    "id": "VARCHAR", "response_id": "VARCHAR", "datapoint_id": "VARCHAR", "task_id": "VARCHAR",
    "teacher_model_id": "VARCHAR", "student_model_id": "VARCHAR", "judge_model_id": "VARCHAR",
    "evaluator": "VARCHAR", "scores": "JSON", "rationale": "JSON", "status": "VARCHAR", "error": "VARCHAR",
    "error_kind": "VARCHAR", "raw": "VARCHAR", "attempt_errors": "JSON", "latency_ms": "DOUBLE",
    "cost_usd": "DOUBLE", "evaluated_at": "VARCHAR",
}
_PHASES = {"datapoints": "phase3_datapoints", "responses": "phase4_responses", "evals": "phase5_evaluations"}


def cache_folder() -> Path:
    """``$COEVAL_VIEW_CACHE``, else ``$XDG_CACHE_HOME/coeval/view`` (``~/.cache/...``)."""
    env = os.environ.get("COEVAL_VIEW_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "coeval" / "view"


def _files(run: Path, phase: str) -> list[Path]:
    d = run / phase
    return sorted(d.glob("*.jsonl")) if d.is_dir() else []


def _run_key(run: Path) -> str:
    return hashlib.sha256(f"{_CACHE_VERSION}|{run.resolve()}".encode()).hexdigest()[:16]


def _fingerprint(run: Path) -> str:
    """``<run key>-<content key>``: the run's folder, and each record file's size and time."""
    digest = hashlib.sha256()
    for phase in _PHASES.values():
        for f in _files(run, phase):
            st = f.stat()
            digest.update(f"|{f.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return f"{_run_key(run)}-{digest.hexdigest()[:16]}"


def _sql_list(paths: Sequence[Path]) -> str:
    return "[" + ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths) + "]"


def _columns_sql(columns: dict[str, str]) -> str:
    return "{" + ", ".join(f"{k}: '{v}'" for k, v in columns.items()) + "}"


def _read(paths: Sequence[Path], columns: dict[str, str]) -> str:
    """A SELECT over JSONL files; the last valid record per id wins (an ok one over a
    failed retry of the same id, then the latest line)."""
    if not paths:
        nulls = ", ".join(f"CAST(NULL AS {t}) AS {k}" for k, t in columns.items())
        return f"SELECT {nulls}, 0 AS _line WHERE false"
    return (
        f"SELECT *, row_number() OVER () AS _line FROM read_json({_sql_list(paths)}, format='newline_delimited', "
        f"ignore_errors=true, columns={_columns_sql(columns)})"
    )


def _latest(source: str) -> str:
    return (
        f"SELECT * EXCLUDE (_line) FROM ({source}) WHERE id IS NOT NULL AND id <> '' QUALIFY row_number() OVER "
        "(PARTITION BY id ORDER BY coalesce(status, 'ok') = 'ok' DESC, _line DESC) = 1"
    )


_STATUS = ("CASE WHEN status IN ('ok', 'failed') THEN status WHEN status IS NOT NULL THEN 'failed' "
           "WHEN scores IS NOT NULL AND json_array_length(json_keys(scores)) = 0 THEN 'failed' ELSE 'ok' END")
_STUDENT = ("coalesce(student_model_id, CASE WHEN response_id LIKE datapoint_id || '__%' "
            "THEN substr(response_id, length(datapoint_id) + 3) END)")


class RunStore:
    """A read-only DuckDB view of one run folder (thread-safe: a cursor per call)."""

    def __init__(self, run: Path, *, cache: Path | None = None) -> None:
        self.run = run
        self.name = run.name
        folder = cache or cache_folder()
        folder.mkdir(parents=True, exist_ok=True)
        db = folder / f"{_fingerprint(run)}.duckdb"
        if not db.exists():
            self._build(db)
            for old in folder.glob(f"{_run_key(run)}-*.duckdb"):  # earlier states of this run
                if old != db:
                    old.unlink(missing_ok=True)
        self._con = duckdb.connect(str(db), read_only=True, config={"memory_limit": MEMORY_LIMIT})
        self._lock = threading.Lock()

    def _build(self, db: Path) -> None:
        part = db.with_suffix(f".{os.getpid()}.part")
        part.unlink(missing_ok=True)
        con = duckdb.connect(str(part), config={"memory_limit": MEMORY_LIMIT, "preserve_insertion_order": "false"})
        try:
            run = self.run
            con.execute(f"CREATE TABLE datapoints AS {_latest(_read(_files(run, _PHASES['datapoints']), _DP_COLUMNS))}")
            con.execute(f"CREATE TABLE responses AS {_latest(_read(_files(run, _PHASES['responses']), _RESP_COLUMNS))}")
            con.execute(
                f"CREATE TABLE evals AS SELECT * REPLACE ({_STATUS} AS status, {_STUDENT} AS student_model_id) "
                f"FROM ({_latest(_read(_files(run, _PHASES['evals']), _EVAL_COLUMNS))})"
            )
            con.execute(
                "CREATE TABLE judgments AS "
                "SELECT e.id, e.datapoint_id, e.response_id, e.task_id, e.teacher_model_id, e.student_model_id, "
                "e.judge_model_id, e.status, k.key AS factor, k.value ->> '$' AS score, "
                "CASE lower(k.value ->> '$') WHEN 'high' THEN 1.0 WHEN 'medium' THEN 0.5 WHEN 'low' THEN 0.0 "
                "ELSE TRY_CAST(k.value ->> '$' AS DOUBLE) END AS value "
                "FROM evals e, json_each(e.scores) k WHERE e.status = 'ok' "
                "UNION ALL SELECT id, datapoint_id, response_id, task_id, teacher_model_id, student_model_id, "
                "judge_model_id, status, NULL, NULL, NULL FROM evals WHERE status <> 'ok'"
            )
            con.execute("CREATE INDEX judgments_dp ON judgments (datapoint_id)")
        finally:
            con.close()
        part.replace(db)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            cur = self._con.cursor()
        try:
            return cur.execute(sql, list(params)).fetchall()
        finally:
            cur.close()

    def query_dicts(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        with self._lock:
            cur = self._con.cursor()
        try:
            cur.execute(sql, list(params))
            names = [d[0] for d in cur.description or ()]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
        finally:
            cur.close()

    def close(self) -> None:
        self._con.close()
