"""What a judge reply says beyond its levels, worked out per record while phase 5 is read.

A reply is *explained* when its ``rationale`` gives at least one real reason (a non-empty
text that is not the judge prompt's own example), and *copied* when a factor name or a
reason repeats that example (``criterion_name``, "one sentence on why"). Each rule exists
twice, as DuckDB SQL (the loader's single pass over the phase-5 files computes both columns
on all cores, so a million rationales never reach Python) and in Python (for files DuckDB
cannot read); ``tests/analysis/test_reply_flags.py`` holds them to the same answers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from coeval_analysis.loading.jsonl import Computed
from coeval_analysis.loading.vocabulary import Vocabulary, encode

__all__ = ["JUDGE_EXAMPLES", "REPLY_FLAG_COLUMNS", "copies_example", "replies_frame", "reply_flags"]

_COLUMNS_OUT = ["judge", "response", "explained", "copied"]

#: The judge templates' own example texts (normalised): a reply made of them was copied.
JUDGE_EXAMPLES = frozenset({"criterion name", "one sentence on why"})


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


def _record_flags(rec: Mapping[str, Any]) -> tuple[bool, bool]:
    scores = rec.get("scores")
    return reply_flags([str(k) for k in scores] if isinstance(scores, dict) else [], rec.get("rationale"))


def _norm_sql(x: str) -> str:
    return f"trim(regexp_replace(lower({x}), '[^0-9a-z]+', ' ', 'g'))"


_EXAMPLES_SQL = "(" + ", ".join(f"'{e}'" for e in sorted(JUDGE_EXAMPLES)) + ")"
#: the longest word of each example: a text can normalise to the example only if its lower
#: case holds that word whole, so the regular expression runs on those texts alone (it took
#: 6 of a million judgments' 8 s of reading when it ran on every reason)
_EXAMPLE_WORDS = sorted({max(e.split(), key=len) for e in JUDGE_EXAMPLES})


def _is_example_sql(x: str) -> str:
    """SQL: the text ``x`` normalises to one of the examples. DuckDB evaluates a CASE's
    branch only on the rows its test selects; an AND would run both sides on every row."""
    maybe = " OR ".join(f"contains(lower({x}), '{w}')" for w in _EXAMPLE_WORDS)
    return f"(CASE WHEN {maybe} THEN {_norm_sql(x)} IN {_EXAMPLES_SQL} ELSE false END)"


#: the rationale's string reasons (a text, or the text values of an object), as a list
_REASONS_SQL = (
    "(CASE json_type(rationale) WHEN 'VARCHAR' THEN [json_extract_string(rationale, '$')] "
    "WHEN 'OBJECT' THEN list_transform(list_filter(json_extract(rationale, '$.*'), "
    "lambda v: json_type(v) = 'VARCHAR'), lambda v: json_extract_string(v, '$')) ELSE []::VARCHAR[] END)"
)
_EXPLAINED_SQL = (
    f"coalesce(len(list_filter({_REASONS_SQL}, lambda r: trim(r) <> '' AND NOT {_is_example_sql('r')})) > 0, false)"
)
_COPIED_SQL = (
    f"coalesce(len(list_filter({_REASONS_SQL}, lambda r: trim(r) <> '' AND {_is_example_sql('r')})) > 0"
    f" OR len(list_filter(map_keys(scores), lambda k: {_is_example_sql('k')})) > 0, false)"
)

#: ``read_records`` computed columns; they need ``scores`` (MAP) and ``rationale`` (JSON) read.
REPLY_FLAG_COLUMNS: dict[str, Computed] = {
    "reply_explained": Computed(_EXPLAINED_SQL, lambda rec: _record_flags(rec)[0], pa.bool_()),
    "reply_copied": Computed(_COPIED_SQL, lambda rec: _record_flags(rec)[1], pa.bool_()),
}


def replies_frame(table: pa.Table, response_ids: Vocabulary) -> pd.DataFrame:
    """One row per ok (judge, response) with a reason or a copied example:
    ``judge, response`` (the run's response code), ``explained``, ``copied`` (any of its
    records, per-factor records together). ``table`` has ``judge_model_id``,
    ``response_id``, ``status`` and the :data:`REPLY_FLAG_COLUMNS`."""
    explained = pc.fill_null(table.column("reply_explained"), False)
    copied = pc.fill_null(table.column("reply_copied"), False)
    status_ok = pc.fill_null(pc.equal(table.column("status"), "ok"), True)
    keep = pc.and_(status_ok, pc.or_(explained, copied))
    rows = table.select(["judge_model_id", "response_id"]).append_column("explained", explained)
    rows = rows.append_column("copied", copied).filter(keep)
    codes = encode(rows.column("response_id").chunks, response_ids)
    judges = rows.column("judge_model_id").to_numpy(zero_copy_only=False)
    frame = pd.DataFrame(
        {
            "judge": judges,
            "response": codes,
            "explained": rows.column("explained").to_numpy(zero_copy_only=False),
            "copied": rows.column("copied").to_numpy(zero_copy_only=False),
        }
    )
    frame = frame[(frame["response"] >= 0) & frame["judge"].notna() & (frame["judge"] != "")]
    if frame.empty:
        return pd.DataFrame(columns=_COLUMNS_OUT)
    grouped = frame.groupby(["judge", "response"], sort=False, as_index=False)[["explained", "copied"]].any()
    grouped["judge"] = grouped["judge"].astype(str)
    grouped["response"] = grouped["response"].astype(np.int64)
    return grouped[_COLUMNS_OUT].reset_index(drop=True)
