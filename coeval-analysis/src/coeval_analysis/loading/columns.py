"""Helpers over the Arrow columns the loader reads: score parsing, record ids, statuses."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from coeval_analysis.loading.vocabulary import Vocabulary

__all__ = [
    "ID_HASH", "categorical", "failed_status", "id_codes", "last_valid", "parse_score", "parse_scores", "short_text",
    "take_categorical", "text_chunks",
]

_LEVELS = {"low": (0.0, 0), "medium": (0.5, 1), "high": (1.0, 2)}
#: a 64-bit hash of each record's id, computed by DuckDB while it reads (see id_codes)
ID_HASH = {"id_hash": "hash(id)"}


def parse_score(raw: Any) -> tuple[float, int]:
    """(value in [0, 1], level) of one score; level is 0/1/2 for Low/Medium/High, -1 for
    other numbers; (nan, -1) when the value is not a score. Accepts numbers, their text,
    the three level words (any case) and ``{"score": ...}`` objects (as JSON text too)."""
    if isinstance(raw, dict):
        for key in ("score", "value", "label"):
            if key in raw:
                return parse_score(raw[key])
        return float("nan"), -1
    if isinstance(raw, bool):
        return float("nan"), -1
    if isinstance(raw, int | float):
        v = float(raw)
    elif isinstance(raw, str):
        text = raw.strip()
        if text.startswith("{"):
            try:
                return parse_score(json.loads(text))
            except (json.JSONDecodeError, RecursionError):
                return float("nan"), -1
        text = text.lower()
        if text in _LEVELS:
            return _LEVELS[text]
        if text in ("true", "false", "nan", "inf", "-inf", "infinity"):
            return float("nan"), -1
        try:
            v = float(text)
        except ValueError:
            return float("nan"), -1
    else:
        return float("nan"), -1
    if not (0.0 <= v <= 1.0):
        return float("nan"), -1
    return v, {0.0: 0, 0.5: 1, 1.0: 2}.get(v, -1)



def text_chunks(table: pa.Table, name: str) -> list[pa.Array]:
    chunks: list[pa.Array] = table.column(name).chunks
    return chunks


def failed_status(table: pa.Table) -> np.ndarray:
    if table.num_rows == 0:
        return np.zeros(0, bool)
    is_failed = pc.equal(pc.utf8_lower(table.column("status")), "failed")
    return np.asarray(pc.fill_null(is_failed, False).to_numpy())


def id_codes(table: pa.Table) -> np.ndarray:
    """Codes that are equal exactly when ids are; a record without an id is unique.

    Rows are grouped by the 64-bit hash DuckDB computed while reading (``id_hash``), which
    is much cheaper than hashing a million strings again; rows that share a hash (in
    practice only true duplicates) are then re-coded by their id text, so a hash collision
    can never merge two different records."""
    n = table.num_rows
    if n == 0:
        return np.zeros(0, np.int64)
    if "id_hash" not in table.column_names:  # read without DuckDB: compare the texts
        enc = pc.dictionary_encode(table.column("id").combine_chunks())
        codes: np.ndarray = pc.fill_null(enc.indices, -1).to_numpy().astype(np.int64)
        missing = codes < 0
        codes[missing] = len(enc.dictionary) + np.arange(int(missing.sum()))
        return codes
    h = table.column("id_hash").to_numpy(zero_copy_only=False).astype(np.uint64)
    order = np.argsort(h, kind="stable")
    hs = h[order]
    first = np.r_[True, hs[1:] != hs[:-1]]
    group = np.cumsum(first) - 1
    codes = np.empty(n, np.int64)
    codes[order] = group
    shared_sorted = ~first | np.r_[~first[1:], False]
    if shared_sorted.any():
        rows = order[shared_sorted]
        texts = table.column("id").take(pa.array(rows)).to_pylist()
        exact: dict[str | None, int] = {}
        base = int(group[-1]) + 1
        codes[rows] = [exact.setdefault(t, base + len(exact)) for t in texts]
    missing = table.column("id").is_null().to_numpy(zero_copy_only=False)
    if missing.any():
        codes[missing] = codes.max() + 1 + np.arange(int(missing.sum()))
    return codes


def last_valid(ids: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Row indices kept by "the last valid record of an id wins (else the last)"."""
    if len(ids) == 0:
        return np.zeros(0, np.int64)
    order = np.lexsort((np.arange(len(ids)), valid, ids))
    sorted_ids = ids[order]
    last = np.r_[sorted_ids[1:] != sorted_ids[:-1], True]
    return np.sort(order[last])


def categorical(codes: Any, vocab: Vocabulary) -> pd.Categorical:
    return pd.Categorical.from_codes(
        np.asarray(codes, dtype=np.int32), categories=vocab.index, validate=False
    )


def take_categorical(col: pd.Series, rows: np.ndarray) -> pd.Categorical:
    return pd.Categorical.from_codes(
        col.cat.codes.to_numpy()[rows], categories=col.cat.categories, validate=False
    )


def parse_scores(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(value, level) per score text; parsing happens once per distinct text."""
    enc = pc.dictionary_encode(values)
    parsed = [parse_score(s) for s in enc.dictionary.to_pylist()]
    vals = np.array([v for v, _ in parsed] + [np.nan], np.float64)
    lvls = np.array([lv for _, lv in parsed] + [-1], np.int8)
    idx = pc.fill_null(enc.indices, -1).to_numpy().astype(np.int64)
    return vals[idx], lvls[idx]


def short_text(v: Any) -> str:
    text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."
