"""The SQL that turns a run folder's JSONL into the viewer's database, as ordered steps.

The first step makes ``judgments`` from the few columns the start page and the filtered
table need, so those pages can be answered while the text-heavy tables (every prompt,
answer and raw reply) and the index are still being written. Each step carries a weight
(about its share of the work, from the size of the files it reads) for the "indexing n%"
the server shows meanwhile.

Tables: ``datapoint_summary`` (the unfiltered datapoint table), ``judgments`` (one row per evaluation and factor, ``value`` 0 / 0.5 / 1 for Low /
Medium / High; a failed evaluation is one row with no factor), ``evals`` (one row per
evaluation record, the last valid per id), ``responses`` and ``datapoints``. Legacy records
(no ``status``, no ``student_model_id``) get both derived here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from coeval_analysis.loading.run_files import jsonl_files
from coeval_analysis.viewer.oversized import MAX_RECORD_BYTES
from coeval_analysis.viewer.rowsql import datapoint_rows_sql

__all__ = ["DATAPOINT_SUMMARY", "JUDGMENTS_STEP", "PHASES", "Step", "build_steps", "preliminary_ranking_sql",
           "record_files"]

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
    "cost_usd": "DOUBLE", "generated_at": "VARCHAR", "sample": "INTEGER",
}
_EVAL_COLUMNS = {
    "id": "VARCHAR", "response_id": "VARCHAR", "datapoint_id": "VARCHAR", "task_id": "VARCHAR",
    "teacher_model_id": "VARCHAR", "student_model_id": "VARCHAR", "judge_model_id": "VARCHAR",
    "evaluator": "VARCHAR", "scores": "JSON", "rationale": "JSON", "status": "VARCHAR", "error": "VARCHAR",
    "error_kind": "VARCHAR", "raw": "VARCHAR", "attempt_errors": "JSON", "latency_ms": "DOUBLE",
    "cost_usd": "DOUBLE", "evaluated_at": "VARCHAR", "execution": "JSON",
}
#: what ``judgments`` needs of an evaluation record (no text: read fast)
_LIGHT_EVAL_COLUMNS = {
    k: _EVAL_COLUMNS[k]
    for k in ("id", "response_id", "datapoint_id", "task_id", "teacher_model_id", "student_model_id",
              "judge_model_id", "scores", "status")
}
PHASES = {"datapoints": "phase3_datapoints", "responses": "phase4_responses", "evals": "phase5_evaluations"}


@attrs.frozen
class Step:
    """One statement of the build; ``weight`` is its rough share of the work."""

    name: str
    sql: str
    weight: float
    #: the table this step writes (complete once it ran)
    table: str = ""


def record_files(run: Path, phase: str) -> list[Path]:
    """The phase's record files, through the run-file guard (a FIFO, a device or a link
    leaving the run folder is an :class:`~coeval_analysis.errors.AnalysisInputError`)."""
    return jsonl_files(run, phase)


def _sql_list(paths: Sequence[Path]) -> str:
    return "[" + ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths) + "]"


def _columns_sql(columns: dict[str, str]) -> str:
    return "{" + ", ".join(f"{k}: '{v}'" for k, v in columns.items()) + "}"


def _read(paths: Sequence[Path], columns: dict[str, str]) -> str:
    """A SELECT over JSONL files, each line numbered (for "the latest line wins"). A line
    over :data:`MAX_RECORD_BYTES` fails the read (see :mod:`.oversized`)."""
    if not paths:
        nulls = ", ".join(f"CAST(NULL AS {t}) AS {k}" for k, t in columns.items())
        return f"SELECT {nulls}, 0 AS _line WHERE false"
    return (
        f"SELECT *, row_number() OVER () AS _line FROM read_json({_sql_list(paths)}, format='newline_delimited', "
        f"ignore_errors=true, maximum_object_size={MAX_RECORD_BYTES}, columns={_columns_sql(columns)})"
    )


def _latest(source: str) -> str:
    """The last valid record per id: an ok one over a failed retry of the same id, then the latest line."""
    return (
        f"SELECT * EXCLUDE (_line) FROM ({source}) WHERE id IS NOT NULL AND id <> '' QUALIFY row_number() OVER "
        "(PARTITION BY id ORDER BY coalesce(status, 'ok') = 'ok' DESC, _line DESC) = 1"
    )


_STATUS = ("CASE WHEN status IN ('ok', 'failed') THEN status WHEN status IS NOT NULL THEN 'failed' "
           "WHEN scores IS NOT NULL AND json_array_length(json_keys(scores)) = 0 THEN 'failed' ELSE 'ok' END")
_STUDENT = ("coalesce(student_model_id, CASE WHEN response_id LIKE datapoint_id || '__%' "
            "THEN substr(response_id, length(datapoint_id) + 3) END)")


def _evals(paths: Sequence[Path], columns: dict[str, str]) -> str:
    return f"SELECT * REPLACE ({_STATUS} AS status, {_STUDENT} AS student_model_id) FROM ({_latest(_read(paths, columns))})"


def _judgments(paths: Sequence[Path]) -> str:
    """One row per evaluation and factor, straight from the files (one pass, no scratch table)."""
    return (
        "CREATE TABLE judgments AS SELECT id, datapoint_id, response_id, task_id, teacher_model_id, student_model_id, "
        "judge_model_id, status, factor, score, CASE lower(score) WHEN 'high' THEN 1.0 WHEN 'medium' THEN 0.5 "
        "WHEN 'low' THEN 0.0 ELSE TRY_CAST(score AS DOUBLE) END AS value "
        "FROM (SELECT * EXCLUDE (scores), json_extract_string(scores, factor) AS score "
        "FROM (SELECT *, unnest(CASE WHEN status = 'ok' THEN json_keys(scores) ELSE [NULL::VARCHAR] END) AS factor "
        f"FROM ({_evals(paths, _LIGHT_EVAL_COLUMNS)})))"
    )


def preliminary_ranking_sql(run: Path) -> str:
    """Each student's mean score straight from the evaluation files, in one pass over the
    few columns it needs: every ok record counts, before retries and duplicates are merged
    (so it can differ slightly from the final ranking). What a first look shows while the
    database is built."""
    source = _read(record_files(run, PHASES["evals"]), _LIGHT_EVAL_COLUMNS)
    return (
        "SELECT student, avg(CASE lower(k.value ->> '$') WHEN 'high' THEN 1.0 WHEN 'medium' THEN 0.5 WHEN 'low' "
        "THEN 0.0 ELSE TRY_CAST(k.value ->> '$' AS DOUBLE) END) AS mean, count(*) AS n "
        f"FROM (SELECT {_STUDENT} AS student, scores FROM ({source}) WHERE coalesce(status, 'ok') = 'ok') e, "
        "json_each(e.scores) k GROUP BY student HAVING mean IS NOT NULL ORDER BY mean DESC, student"
    )


def _size(paths: Sequence[Path]) -> float:
    return float(sum(p.stat().st_size for p in paths)) + 1.0


def build_steps(run: Path, files: Mapping[str, Sequence[Path]] | None = None) -> list[Step]:
    """The statements that fill an empty database from ``run``, ``judgments`` first.
    ``files``: the record files to read per :data:`PHASES` key (default: the run's own)."""
    found = files or {k: record_files(run, phase) for k, phase in PHASES.items()}
    dps, resps, evals = (found[k] for k in ("datapoints", "responses", "evals"))
    e = _size(evals)
    return [
        Step("listing judgments", _judgments(evals), 0.3 * e),
        Step("summarising datapoints", f"CREATE TABLE {DATAPOINT_SUMMARY} AS {datapoint_rows_sql()}", 0.1 * e,
             DATAPOINT_SUMMARY),
        Step("reading judges' replies", f"CREATE TABLE evals AS {_evals(evals, _EVAL_COLUMNS)}", 0.4 * e),
        Step("reading answers", f"CREATE TABLE responses AS {_latest(_read(resps, _RESP_COLUMNS))}", _size(resps)),
        Step("reading datapoints", f"CREATE TABLE datapoints AS {_latest(_read(dps, _DP_COLUMNS))}", _size(dps)),
        Step("indexing datapoints", "CREATE INDEX judgments_dp ON judgments (datapoint_id)", 0.25 * e),
    ]


#: after this step, ``judgments`` is complete (the start page and filtered tables can be answered)
JUDGMENTS_STEP = "listing judgments"
#: the unfiltered datapoint table, stored (the start page's biggest question)
DATAPOINT_SUMMARY = "datapoint_summary"
