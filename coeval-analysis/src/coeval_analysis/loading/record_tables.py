"""The loader's tables of records: datapoints (phase 3), responses (phase 4) and the kept
evaluation records (phase 5) with who answered what, their evaluators and error kinds."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from coeval.record_schema import (
    DATAPOINT_ID,
    JUDGE_MODEL_ID,
    RESPONSE_ID,
    SAMPLED_TARGET_ATTRIBUTES,
    STUDENT_MODEL_ID,
    TASK_ID,
    TEACHER_MODEL_ID,
)

from coeval_analysis.loading.columns import (
    categorical,
    failed_status,
    id_codes,
    last_valid,
    short_text,
    text_chunks,
)
from coeval_analysis.loading.jsonl import map_entries
from coeval_analysis.loading.run_data import LLM_JUDGE, DataQuality, PhaseQuality
from coeval_analysis.loading.vocabulary import Vocabulary, encode

__all__ = [
    "count_invalid_scores", "datapoint_tables", "error_kinds", "evaluators", "kept_evaluations", "record_fields",
    "response_table",
]


def datapoint_tables(
    dps: pa.Table, dp_bad: int, quality: DataQuality, datapoint_ids: Vocabulary, tasks: Vocabulary,
    models: Vocabulary,
) -> tuple[pd.DataFrame, Any, Any]:
    """Phase 3: the last valid record per datapoint, its attributes and its gold labels."""
    dp_failed = failed_status(dps)
    dp_rows = last_valid(id_codes(dps), ~dp_failed) if dps.num_rows else np.zeros(0, np.int64)
    quality.phase3 = PhaseQuality(
        dps.num_rows, dp_bad, dps.num_rows - len(dp_rows), int(dp_failed[dp_rows].sum())
    )
    dp_codes = encode(text_chunks(dps, "id"), datapoint_ids)
    datapoints = pd.DataFrame(
        {
            "task": categorical(encode(text_chunks(dps, TASK_ID), tasks)[dp_rows], tasks),
            "teacher": categorical(encode(text_chunks(dps, TEACHER_MODEL_ID), models)[dp_rows], models),
            "failed": dp_failed[dp_rows],
        },
        index=pd.Index(dp_codes[dp_rows], name="datapoint"),
    )
    attributes = _attribute_table(dps, dp_rows, dp_codes, tasks)
    gold_by_dp = _datapoint_labels(dps, dp_rows, dp_codes)
    return datapoints, attributes, gold_by_dp


def response_table(
    resp: pa.Table, resp_bad: int, want_text: bool, quality: DataQuality,
    vocabs: tuple[Vocabulary, Vocabulary, Vocabulary, Vocabulary],
) -> pd.DataFrame:
    """Phase 4: the last valid record per response (its text only when wanted)."""
    datapoint_ids, tasks, models, response_ids = vocabs
    resp_failed = failed_status(resp)
    resp_rows = last_valid(id_codes(resp), ~resp_failed) if resp.num_rows else np.zeros(0, np.int64)
    quality.phase4 = PhaseQuality(
        resp.num_rows, resp_bad, resp.num_rows - len(resp_rows), int(resp_failed[resp_rows].sum())
    )
    lengths = (
        pc.fill_null(pc.cast(resp.column("length"), pa.float64()), np.nan).to_numpy()
        if resp.num_rows
        else np.zeros(0)
    )
    responses = pd.DataFrame(
        {
            "datapoint": encode(text_chunks(resp, DATAPOINT_ID), datapoint_ids)[resp_rows],
            "task": categorical(encode(text_chunks(resp, TASK_ID), tasks)[resp_rows], tasks),
            "teacher": categorical(encode(text_chunks(resp, TEACHER_MODEL_ID), models)[resp_rows], models),
            "student": categorical(encode(text_chunks(resp, STUDENT_MODEL_ID), models)[resp_rows], models),
            "length": lengths[resp_rows],
            "failed": resp_failed[resp_rows],
        },
        index=pd.Index(encode(text_chunks(resp, "id"), response_ids)[resp_rows], name="response"),
    )
    if want_text and resp.num_rows:
        responses["text"] = resp.column("response").take(pa.array(resp_rows)).to_pylist()
    return responses


def record_fields(
    kept_codes: Callable[..., np.ndarray], responses: pd.DataFrame, n_kept: int,
    vocabs: tuple[Vocabulary, Vocabulary, Vocabulary, Vocabulary],
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Codes of who answered what for each kept evaluation: from its response record when
    that resolves, from the evaluation's own fields otherwise."""
    datapoint_ids, tasks, models, response_ids = vocabs
    rec = {"response": kept_codes(RESPONSE_ID, response_ids), "judge": kept_codes(JUDGE_MODEL_ID, models)}
    position = np.full(len(response_ids) + 1, -1, np.int64)  # code -1 -> last slot -> -1
    position[responses.index.to_numpy()] = np.arange(len(responses))
    pos = position[rec["response"]]
    has_resp = pos >= 0
    pos_i = np.where(has_resp, pos, 0)
    for col, field, vocab in (
        ("datapoint", DATAPOINT_ID, datapoint_ids),
        ("task", TASK_ID, tasks),
        ("teacher", TEACHER_MODEL_ID, models),
        ("student", STUDENT_MODEL_ID, models),
    ):
        src = responses[col].to_numpy() if col == "datapoint" else responses[col].cat.codes.to_numpy()
        out = np.full(n_kept, -1, np.int32)
        out[has_resp] = src[pos[has_resp]]
        rest = np.flatnonzero(out < 0)
        if len(rest):
            out[rest] = kept_codes(field, vocab, rest)
        rec[col] = out
    return rec, pos_i, has_resp


def kept_evaluations(
    ev: pa.Table, s_rows: np.ndarray, bad: np.ndarray, quality: DataQuality
) -> tuple[np.ndarray, np.ndarray]:
    """Which evaluation records failed (no usable score counts as failed) and which rows
    stand for their id (the last valid one); counts duplicates and superseded failures."""
    n = ev.num_rows
    usable = np.bincount(s_rows[~bad], minlength=n)
    failed = failed_status(ev) | (usable == 0)
    ids = id_codes(ev)
    kept = last_valid(ids, ~failed)
    quality.n_duplicates = n - len(kept)
    if quality.n_duplicates:
        dropped = np.ones(n, bool)
        dropped[kept] = False
        id_has_valid = np.zeros(int(ids.max()) + 1, bool)
        id_has_valid[ids[kept][~failed[kept]]] = True
        quality.n_superseded_failures = int(id_has_valid[ids[dropped & failed]].sum())
    return failed, kept


def count_invalid_scores(s_values: pa.Array, bad: np.ndarray, quality: DataQuality) -> None:
    """How many score values could not be read, and the 20 most common of them."""
    invalid = (
        Counter(short_text(v) for v in s_values.filter(pa.array(bad)).to_pylist()) if bad.any() else Counter()
    )
    quality.n_invalid_scores = int(bad.sum())
    quality.invalid_values = dict(invalid.most_common(20))


def evaluators(ev: pa.Table, kept: np.ndarray) -> np.ndarray:
    """Each kept record's evaluator: its ``evaluator`` field, or for old records one
    derived from ``judge_model_id`` (label, gold, metric..., else an LLM judge)."""
    take = pa.array(kept)
    given = pc.dictionary_encode(ev.column("evaluator").combine_chunks().take(take))
    judge = pc.dictionary_encode(ev.column(JUDGE_MODEL_ID).combine_chunks().take(take))

    def derive(j: str | None) -> str:
        if j in ("label", "gold"):
            return str(j)
        if isinstance(j, str) and (j == "metric" or j.startswith("metric:")):
            return "metric"
        return LLM_JUDGE

    given_names = np.array([*given.dictionary.to_pylist(), None], dtype=object)
    derived = np.array([derive(j) for j in judge.dictionary.to_pylist()] + [LLM_JUDGE], dtype=object)
    g_idx = pc.fill_null(given.indices, -1).to_numpy().astype(np.int64)
    j_idx = pc.fill_null(judge.indices, -1).to_numpy().astype(np.int64)
    return np.asarray(np.where(g_idx >= 0, given_names[g_idx], derived[j_idx]))


_KIND = re.compile(r"^\s*([A-Za-z_][\w.-]*)")


def error_kinds(ev: pa.Table, kept: np.ndarray) -> np.ndarray:
    """``error_kind`` of each kept record, else the leading word of its ``error``."""
    raw = pc.coalesce(ev.column("error_kind"), ev.column("error")).combine_chunks().take(pa.array(kept))
    enc = pc.dictionary_encode(raw)
    kinds = []
    for text in enc.dictionary.to_pylist():
        kind = None
        if text.startswith("{"):
            try:
                obj = json.loads(text)
                kind = obj.get("kind") or obj.get("type") if isinstance(obj, dict) else None
            except (json.JSONDecodeError, RecursionError):
                pass
        if kind is None:
            m = _KIND.match(text)
            kind = m.group(1) if m else "error"
        kinds.append(str(kind))
    lookup = np.array([*kinds, None], dtype=object)
    return np.asarray(lookup[pc.fill_null(enc.indices, -1).to_numpy().astype(np.int64)])


def _attribute_table(
    dps: pa.Table, dp_rows: np.ndarray, dp_codes: np.ndarray, tasks: Vocabulary
) -> pd.DataFrame:
    """(datapoint, task, attribute, value) of the kept datapoints' target attributes."""
    empty = pd.DataFrame({"datapoint": np.zeros(0, np.int32), "task": categorical([], tasks),
                          "attribute": pd.Categorical([]), "value": pd.Categorical([])})  # fmt: skip
    if dps.num_rows == 0:
        return empty
    rows, keys, values = map_entries(dps.column(SAMPLED_TARGET_ATTRIBUTES))
    keep = np.zeros(dps.num_rows, bool)
    keep[dp_rows] = True
    sel = keep[rows] & pc.is_valid(values).to_numpy(zero_copy_only=False)
    if not sel.any():
        return empty
    mask = pa.array(sel)
    task_codes = encode(text_chunks(dps, TASK_ID), tasks)
    return pd.DataFrame(
        {
            "datapoint": dp_codes[rows[sel]],
            "task": categorical(task_codes[rows[sel]], tasks),
            "attribute": keys.filter(mask).to_pandas().astype("category").to_numpy(),
            "value": values.filter(mask).to_pandas().astype("category").to_numpy(),
        }
    ).astype({"attribute": "category", "value": "category"})


def _datapoint_labels(dps: pa.Table, dp_rows: np.ndarray, dp_codes: np.ndarray) -> dict[int, Any]:
    """Gold labels of benchmark datapoints (``labels``, else ``label``) by datapoint code."""
    out: dict[int, Any] = {}
    if dps.num_rows == 0:
        return out
    for key in ("labels", "label"):
        col = dps.column(key).take(pa.array(dp_rows))
        valid = np.flatnonzero(pc.is_valid(col).to_numpy(zero_copy_only=False))
        if len(valid) == 0:
            continue
        texts = col.take(pa.array(valid)).to_pylist()
        for i, text in zip(valid, texts, strict=True):
            code = int(dp_codes[dp_rows[i]])
            if code not in out:
                try:
                    out[code] = json.loads(text)
                except (json.JSONDecodeError, RecursionError):
                    out[code] = text
    return out
