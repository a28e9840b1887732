"""What each judge reply says beyond its levels: did it explain itself, did it copy the example?

A flat reply (one level for every factor) is only suspicious when the judge gives no reason
for it; a reply that repeats the judge prompt's own example (the ``criterion_name`` key, the
"one sentence on why" rationale) is degenerate whatever its levels. Both are read from the
phase-5 records' ``rationale`` field (records written before it existed have none); the
rules live in :mod:`coeval_analysis.loading.reply_flags`, and the loader works them out in its one
pass over the files.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa

from coeval_analysis.errors import AnalysisInputError
from coeval_analysis.loading.jsonl import JSON_TEXT, MAP, TEXT, read_records
from coeval_analysis.loading.loader import evaluation_files
from coeval_analysis.loading.reply_flags import (
    JUDGE_EXAMPLES,
    REPLY_FLAG_COLUMNS,
    copies_example,
    replies_frame,
    reply_flags,
)
from coeval_analysis.loading.run_data import RunData
from coeval_analysis.loading.vocabulary import Vocabulary

__all__ = ["JUDGE_EXAMPLES", "copies_example", "judge_replies", "replies_frame", "reply_flags"]

_COLUMNS = {"judge_model_id": TEXT, "response_id": TEXT, "status": TEXT, "rationale": JSON_TEXT, "scores": MAP}


def judge_replies(data: RunData, files: list[Path] | None = None) -> pd.DataFrame:
    """:func:`replies_frame` of a run: the loader's (worked out while it read phase 5), or
    read from ``files`` (or the run folder, for data loaded without them)."""
    if files is None and data.replies is not None:
        return data.replies
    try:
        found = files if files is not None else evaluation_files(data.path)
    except AnalysisInputError:  # an in-memory run (synthetic data) has no folder to read
        found = []
    table, _ = read_records(found, _COLUMNS, REPLY_FLAG_COLUMNS, hidden=("rationale",))
    return replies_frame(table, Vocabulary([pa.array([str(r) for r in data.response_ids], pa.string())]))
