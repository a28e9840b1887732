"""A warning when the run holds stale records: judgments of answers that were made again
(or are gone), answers to datapoints that were. They still count in the numbers until
``coeval run --continue`` makes them again, so the reader must know."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from coeval.storage.record_inputs import RESPONSE_HASH, stale_note, stale_records
from coeval.storage.records import FAILED
from coeval.storage.run_folder import RunFolder

if TYPE_CHECKING:
    from coeval_analysis.data import RunData

__all__ = ["STALE_COLUMNS", "stale_counts", "stale_warnings"]

#: phase-5 fields the loader reads for :func:`stale_counts` beside its own
STALE_COLUMNS = (RESPONSE_HASH, "evaluated_at")


def stale_counts(run_path: str | Path, evaluations: pa.Table) -> Counter[str]:
    """:func:`~coeval.storage.record_inputs.stale_records` of the run, its phase 5 taken from
    the loader's table (``id, status, scores, task_id, response_id`` and
    :data:`STALE_COLUMNS`, in file order): parsing a million judgments again in Python took
    longer than the rest of the analysis."""
    try:
        return stale_records(RunFolder(run_path), evaluations=_slim_rows(evaluations))
    except (OSError, ValueError):  # an unreadable phase 3 or 4: the loader says so itself
        return Counter()


def _slim_rows(table: pa.Table) -> Iterator[Mapping[str, Any]]:
    """Each row as the fields the staleness test reads. A record without a status is failed
    when it has ``scores`` and they are empty (:func:`~coeval.storage.records.record_status`),
    worked out here from the map's length so that no scores are turned into Python."""
    scores = table.column("scores").combine_chunks()
    empty = pa.array(np.diff(scores.offsets.to_numpy()) == 0) if len(scores) else pa.array([], pa.bool_())
    status = table.column("status")
    status = pc.if_else(pc.and_(pc.is_null(status), pc.and_(pc.is_valid(scores), empty)), FAILED, status)
    names = ("id", "task_id", "response_id", RESPONSE_HASH, "evaluated_at")
    columns = [table.column(n).to_pylist() for n in names]
    for st, *values in zip(status.to_pylist(), *columns, strict=True):
        yield {"status": st, **dict(zip(names, values, strict=True))}


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
