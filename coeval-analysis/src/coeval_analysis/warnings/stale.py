"""A warning when the run holds stale records: judgments of answers that were made again
(or are gone), answers to datapoints that were. They still count in the numbers until
``coeval run --continue`` makes them again, so the reader must know."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from coeval.phase_ids import EVALUATION, RESPONSE_COLLECTION
from coeval.record_schema import EVALUATED_AT, ID, RESPONSE_ID
from coeval.storage.record_inputs import RESPONSE_HASH, Answers, read_answers, stale_note, stale_records
from coeval.storage.records import OK
from coeval.storage.run_folder import RunFolder

if TYPE_CHECKING:
    from coeval_analysis.loading.run_data import RunData

__all__ = ["STALE_COLUMNS", "stale_counts", "stale_warnings"]

#: phase-5 fields the loader reads for :func:`stale_counts` beside its own
STALE_COLUMNS = (RESPONSE_HASH, "evaluated_at")


def stale_counts(run_path: str | Path, evaluations: pa.Table) -> Counter[str]:
    """:func:`~coeval.storage.record_inputs.stale_records` of the run, its phase 5 taken from
    the loader's table (``id, status, scores, response_id`` and :data:`STALE_COLUMNS`, in
    file order) and tested in DuckDB: the same test row by row in Python took 5 of a million
    judgments' 30 s of analysis."""
    try:
        answers = read_answers(RunFolder(run_path))
    except (OSError, ValueError):  # an unreadable phase 3 or 4: the loader says so itself
        return Counter()
    out: Counter[str] = Counter()
    if answers.stale:
        out[RESPONSE_COLLECTION] = len(answers.stale)
    judgments = _stale_judgments(evaluations, answers)
    if judgments:
        out[EVALUATION] = judgments
    return out


#: the latest record of each id (the last in file order) that is ok and scores an answer
#: that is gone, stale, of another version, or (without a version) made after it was judged
_STALE_JUDGMENTS = """
SELECT count(*) FROM (
    SELECT ok, response_id, response_hash, evaluated_at FROM judgments
    WHERE id IS NOT NULL AND id <> ''
    QUALIFY row_number() OVER (PARTITION BY id ORDER BY line DESC) = 1
) AS j LEFT JOIN answers AS a ON a.id = j.response_id
WHERE j.ok AND (a.id IS NULL OR a.stale OR CASE WHEN j.response_hash IS NOT NULL
    THEN j.response_hash <> a.version ELSE coalesce(j.evaluated_at < a.generated_at, false) END)
"""


def _stale_judgments(table: pa.Table, answers: Answers) -> int:
    """The number of stale judgments, as :func:`~coeval.storage.record_inputs.stale_records`
    counts them."""
    import duckdb

    judgments = pa.table({
        "line": pa.array(np.arange(table.num_rows, dtype=np.int64)),
        ID: table.column(ID), "ok": _ok(table), RESPONSE_ID: table.column(RESPONSE_ID),
        RESPONSE_HASH: table.column(RESPONSE_HASH), EVALUATED_AT: table.column(EVALUATED_AT),
    })  # fmt: skip
    rows = list(answers.versions())
    names = ("id", "version", "generated_at", "stale")
    types = (pa.string(), pa.string(), pa.string(), pa.bool_())
    answer_table = pa.table([pa.array([r[i] for r in rows], t) for i, t in enumerate(types)], names=names)
    con = duckdb.connect()
    try:
        con.register("judgments", judgments)
        con.register("answers", answer_table)
        found = con.execute(_STALE_JUDGMENTS).fetchone()
    finally:
        con.close()
    return int(found[0]) if found else 0


def _ok(table: pa.Table) -> pa.ChunkedArray | pa.Array:
    """:func:`~coeval.storage.records.is_ok` of each row. A record without a status is failed
    when it has ``scores`` and they are empty (:func:`~coeval.storage.records.record_status`),
    worked out from the map's length so that no scores are turned into Python."""
    scores = table.column("scores").combine_chunks()
    empty = pa.array(np.diff(scores.offsets.to_numpy()) == 0) if len(scores) else pa.array([], pa.bool_())
    status = table.column("status")
    failed_by_scores = pc.and_(pc.is_valid(scores), empty)
    return pc.if_else(pc.is_null(status), pc.invert(failed_by_scores), pc.fill_null(pc.equal(status, OK), False))


def stale_warnings(data: RunData) -> list[dict[str, Any]]:
    """``[{"kind": "stale_records", ...}]`` when the run has any, else []: the counts its
    loader made, or for data built otherwise, the run folder's records read anew."""
    stale = data.stale
    if stale is None:
        try:
            stale = stale_records(RunFolder(data.path))
        except (OSError, ValueError):
            return []
    if not stale:
        return []
    return [{"kind": "stale_records", "subject": None, "message": stale_note(stale), "counts": dict(stale)}]
