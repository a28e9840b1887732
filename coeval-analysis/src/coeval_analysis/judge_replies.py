"""What each judge reply says beyond its levels: did it explain itself, did it copy the example?

A flat reply (one level for every factor) is only suspicious when the judge gives no reason
for it; a reply that repeats the judge prompt's own example (the ``criterion_name`` key, the
"one sentence on why" rationale) is degenerate whatever its levels. Both are read from the
phase-5 records' ``rationale`` field; records written before it existed have none.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from coeval_analysis._jsonl import JSON_TEXT, MAP, TEXT, read_records
from coeval_analysis.data import RunData
from coeval_analysis.errors import AnalysisInputError
from coeval_analysis.loader import evaluation_files

__all__ = ["JUDGE_EXAMPLES", "copies_example", "judge_replies", "reply_flags"]

#: The judge templates' own example texts (normalised): a reply made of them was copied.
JUDGE_EXAMPLES = frozenset({"criterion name", "one sentence on why"})

_COLUMNS = {"judge_model_id": TEXT, "response_id": TEXT, "status": TEXT, "rationale": JSON_TEXT, "scores": MAP}


def _normalise(text: str) -> str:
    return " ".join(re.sub(r"[^0-9a-z]+", " ", text.casefold()).split())


def _reasons(rationale: Any) -> list[str]:
    """The non-empty reason texts of a stored ``rationale`` (text, or factor -> text)."""
    if isinstance(rationale, str) and rationale.strip():
        return [rationale]
    if isinstance(rationale, dict):
        return [v for v in rationale.values() if isinstance(v, str) and v.strip()]
    return []


def copies_example(factors: list[str], rationale: Any) -> bool:
    """Whether a reply repeats the prompt's example: a factor or a reason equal to one."""
    texts = list(factors) + _reasons(rationale)
    return any(_normalise(t) in JUDGE_EXAMPLES for t in texts)


def reply_flags(factors: list[str], rationale: Any) -> tuple[bool, bool]:
    """(explained, copied): a real reason was given; the reply copies the example."""
    reasons = [r for r in _reasons(rationale) if _normalise(r) not in JUDGE_EXAMPLES]
    return bool(reasons), copies_example(factors, rationale)


def _parse(raw: str | None) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _worth_reading(table: pa.Table) -> pa.Array:
    """Rows with a rationale, or a factor named like the example; the rest are neither
    explained nor copied, which is what a (judge, response) without a row means."""
    has_reason = pc.is_valid(table.column("rationale"))
    scores = table.column("scores").combine_chunks()
    offsets = scores.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    keys = scores.keys.slice(int(offsets[0]), int(offsets[-1] - offsets[0])) if len(scores) else pa.array([], pa.string())
    folded = pc.utf8_trim(pc.replace_substring_regex(pc.utf8_lower(keys), r"[^0-9a-z]+", " "), " ")
    hit = pc.fill_null(pc.is_in(folded, value_set=pa.array(sorted(JUDGE_EXAMPLES))), False)
    parents = np.repeat(np.arange(len(scores)), np.diff(offsets))
    example = np.zeros(len(scores), bool)
    example[parents[hit.to_numpy(zero_copy_only=False)]] = True
    return pc.or_(pc.fill_null(has_reason, False), pa.array(example))


def judge_replies(data: RunData, files: list[Path] | None = None) -> pd.DataFrame:
    """One row per ok (judge, response): ``judge, response`` (the run's response code),
    ``explained`` and ``copied`` (any of its records, per-factor records together)."""
    try:
        found = files if files is not None else evaluation_files(data.path)
    except AnalysisInputError:  # an in-memory run (synthetic data) has no folder to read
        found = []
    table, _ = read_records(found, _COLUMNS)
    table = table.filter(_worth_reading(table))  # most replies have neither: keep Python off them
    codes = {str(rid): i for i, rid in enumerate(data.response_ids)}
    rows: dict[tuple[str, int], list[bool]] = {}
    for rec in table.to_pylist():
        judge, rid = rec.get("judge_model_id"), rec.get("response_id")
        if not judge or rid not in codes or (rec.get("status") or "ok") != "ok":
            continue
        factors = [k for k, _ in (rec.get("scores") or [])]
        explained, copied = reply_flags(factors, _parse(rec.get("rationale")))
        seen = rows.setdefault((str(judge), codes[rid]), [False, False])
        seen[0] |= explained
        seen[1] |= copied
    frame = pd.DataFrame(
        [(j, r, e, c) for (j, r), (e, c) in rows.items()], columns=["judge", "response", "explained", "copied"]
    )
    return frame
