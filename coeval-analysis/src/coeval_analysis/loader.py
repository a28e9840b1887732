"""Load a run folder (current or legacy format) into :class:`~coeval_analysis.data.RunData`.

Rules, each applied deliberately and counted in :class:`~coeval_analysis.data.DataQuality`:

* A line that is not a JSON object is skipped (a crash can cut the last line of a file).
* Records sharing an ``id``: the last *valid* one wins (the last one if none is valid);
  the others are counted as duplicates. Legacy runs can hold ids reused on Extend.
* A record is failed when its ``status`` is ``failed`` or it has no usable score (old
  records have no status). Failed records count towards judge failure rates, never as Low.
* Who answered what (student, teacher, task, datapoint) comes from the response record of
  phase 4 when the evaluation's ``response_id`` resolves, else from the evaluation itself
  (old records have no ``student_model_id``); records whose response or student cannot be
  resolved are orphaned.
* Score values are High/Medium/Low (1/0.5/0) or numbers in [0, 1] (also as strings);
  anything else is an invalid score, dropped and counted by value.
* LLM-judge scores must name a factor of the task's rubric (when the rubric is known).
  Metric factors (``{metric: ...}`` in the rubric) and label attributes are scored by their
  evaluators, not by judges, so a mixed rubric never makes a judge record incomplete.
* ``per_factor`` records are merged by (response, judge); a (response, judge, factor)
  scored twice keeps the last score.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import yaml
from coeval.config._yaml import load_yaml_guarded
from coeval.storage.listing import storage_folder_hint
from coeval.storage.run_folder import PHASE_DIRS, RunFolder

from coeval_analysis._arrow import Vocabulary, encode
from coeval_analysis._jsonl import JSON_TEXT, MAP, TEXT, map_entries, read_records
from coeval_analysis.data import LLM_JUDGE, DataQuality, PhaseQuality, RunData
from coeval_analysis.errors import AnalysisInputError
from coeval_analysis.labels import normalise_label
from coeval_analysis.reply_flags import REPLY_FLAG_COLUMNS, replies_frame

__all__ = ["llm_factors", "load_run", "parse_score"]

# the run-folder layout is the core storage layer's: read through it, never spelt again here
PHASE3 = PHASE_DIRS["data_generation"]
PHASE4 = PHASE_DIRS["response_collection"]
PHASE5 = PHASE_DIRS["evaluation"]

_LEVELS = {"low": (0.0, 0), "medium": (0.5, 1), "high": (1.0, 2)}
#: a 64-bit hash of each record's id, computed by DuckDB while it reads (see _id_codes)
_ID_HASH = {"id_hash": "hash(id)"}

_EVAL_COLUMNS = {
    "id": TEXT, "response_id": TEXT, "datapoint_id": TEXT, "task_id": TEXT, "teacher_model_id": TEXT,
    "student_model_id": TEXT, "judge_model_id": TEXT, "evaluator": TEXT, "status": TEXT, "error": TEXT,
    "error_kind": TEXT, "scores": MAP, "gold": JSON_TEXT, "predicted": JSON_TEXT,
}  # fmt: skip
_RESP_COLUMNS = {
    "id": TEXT, "datapoint_id": TEXT, "task_id": TEXT, "teacher_model_id": TEXT, "student_model_id": TEXT,
    "status": TEXT,
}  # fmt: skip
_DP_COLUMNS = {
    "id": TEXT, "task_id": TEXT, "teacher_model_id": TEXT, "status": TEXT, "sampled_target_attributes": MAP,
    "label": JSON_TEXT, "labels": JSON_TEXT,
}  # fmt: skip


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


def llm_factors(rubric: dict[str, Any]) -> list[str]:
    """Rubric factors the LLM judge scores: those without a ``metric`` and without an
    ``evaluator`` other than ``llm_judge`` (a plugin evaluator such as ``pairwise``)."""
    return [f for f, spec in rubric.items()
            if not (isinstance(spec, dict) and (spec.get("metric") or spec.get("evaluator") not in (None, LLM_JUDGE)))]


# --------------------------------------------------------------------------------------
# small files


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise AnalysisInputError(f"{path}: not valid JSON ({exc})") from None


def _read_config(root: Path) -> dict[str, Any]:
    path = RunFolder(root).config_path
    if not path.exists():
        return {}
    try:
        data = load_yaml_guarded(path.read_text(encoding="utf-8"), str(path))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise AnalysisInputError(f"{path}: not valid YAML ({exc})") from None
    return data if isinstance(data, dict) else {}


def _config_tasks(config: dict[str, Any]) -> list[dict[str, Any]]:
    tasks = config.get("tasks")
    return [t for t in tasks if isinstance(t, dict)] if isinstance(tasks, list) else []


def _task_rubrics(root: Path, config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    rubrics: dict[str, dict[str, Any]] = {}
    for task in _config_tasks(config):
        if isinstance(task.get("rubric"), dict):
            rubrics[str(task.get("name"))] = dict(task["rubric"])
    for name, path in _task_files(RunFolder(root).rubric_path("*")):
        data = _read_json(path)
        if not isinstance(data, dict):
            raise AnalysisInputError(f"{path}: a rubric must be a JSON object of factor -> criterion")
        rubrics[name] = data
    return rubrics


def _target_attributes(root: Path, config: dict[str, Any]) -> dict[str, dict[str, list[str]]]:
    out: dict[str, dict[str, list[str]]] = {}
    for task in _config_tasks(config):
        if isinstance(task.get("target_attributes"), dict):
            out[str(task.get("name"))] = {
                str(k): [str(v) for v in (vs if isinstance(vs, list) else [vs])]
                for k, vs in task["target_attributes"].items()
            }
    for name, path in _task_files(RunFolder(root).target_attrs_path("*")):
        data = _read_json(path)
        if isinstance(data, dict):
            out[name] = {str(k): [str(v) for v in (vs if isinstance(vs, list) else [vs])] for k, vs in data.items()}
    return out


def _task_files(pattern: Path) -> list[tuple[str, Path]]:
    """(task, path) of each per-task artifact matching the storage layer's path for task
    ``*`` (``phase2_rubric/*.rubric.json``)."""
    if not pattern.parent.is_dir():
        return []
    suffix = pattern.name[1:]
    return [(path.name[: -len(suffix)], path) for path in sorted(pattern.parent.glob(pattern.name))]


def _label_attributes(config: dict[str, Any]) -> dict[str, list[str]]:
    return {
        str(t.get("name")): [str(a) for a in t["label_attributes"]]
        for t in _config_tasks(config)
        if isinstance(t.get("label_attributes"), list) and t["label_attributes"]
    }


def jsonl_files(root: Path, phase: str) -> list[Path]:
    folder = root / phase
    return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []


# --------------------------------------------------------------------------------------
# helpers over Arrow columns


def _text(table: pa.Table, name: str) -> list[pa.Array]:
    chunks: list[pa.Array] = table.column(name).chunks
    return chunks


def _failed_status(table: pa.Table) -> np.ndarray:
    if table.num_rows == 0:
        return np.zeros(0, bool)
    is_failed = pc.equal(pc.utf8_lower(table.column("status")), "failed")
    return np.asarray(pc.fill_null(is_failed, False).to_numpy())


def _id_codes(table: pa.Table) -> np.ndarray:
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


def _last_valid(ids: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Row indices kept by "the last valid record of an id wins (else the last)"."""
    if len(ids) == 0:
        return np.zeros(0, np.int64)
    order = np.lexsort((np.arange(len(ids)), valid, ids))
    sorted_ids = ids[order]
    last = np.r_[sorted_ids[1:] != sorted_ids[:-1], True]
    return np.sort(order[last])


def _cat(codes: Any, vocab: Vocabulary) -> pd.Categorical:
    return pd.Categorical.from_codes(
        np.asarray(codes, dtype=np.int32), categories=vocab.index, validate=False
    )


def _take_cat(col: pd.Series, rows: np.ndarray) -> pd.Categorical:
    return pd.Categorical.from_codes(
        col.cat.codes.to_numpy()[rows], categories=col.cat.categories, validate=False
    )


def _parse_scores(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(value, level) per score text; parsing happens once per distinct text."""
    enc = pc.dictionary_encode(values)
    parsed = [parse_score(s) for s in enc.dictionary.to_pylist()]
    vals = np.array([v for v, _ in parsed] + [np.nan], np.float64)
    lvls = np.array([lv for _, lv in parsed] + [-1], np.int8)
    idx = pc.fill_null(enc.indices, -1).to_numpy().astype(np.int64)
    return vals[idx], lvls[idx]


def _short(v: Any) -> str:
    text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


# --------------------------------------------------------------------------------------
# the loader


def _datapoint_tables(
    dps: pa.Table, dp_bad: int, quality: DataQuality, datapoint_ids: Vocabulary, tasks: Vocabulary,
    models: Vocabulary,
) -> tuple[pd.DataFrame, Any, Any]:
    """Phase 3: the last valid record per datapoint, its attributes and its gold labels."""
    dp_failed = _failed_status(dps)
    dp_rows = _last_valid(_id_codes(dps), ~dp_failed) if dps.num_rows else np.zeros(0, np.int64)
    quality.phase3 = PhaseQuality(
        dps.num_rows, dp_bad, dps.num_rows - len(dp_rows), int(dp_failed[dp_rows].sum())
    )
    dp_codes = encode(_text(dps, "id"), datapoint_ids)
    datapoints = pd.DataFrame(
        {
            "task": _cat(encode(_text(dps, "task_id"), tasks)[dp_rows], tasks),
            "teacher": _cat(encode(_text(dps, "teacher_model_id"), models)[dp_rows], models),
            "failed": dp_failed[dp_rows],
        },
        index=pd.Index(dp_codes[dp_rows], name="datapoint"),
    )
    attributes = _attribute_table(dps, dp_rows, dp_codes, tasks)
    gold_by_dp = _datapoint_labels(dps, dp_rows, dp_codes)
    return datapoints, attributes, gold_by_dp


def _response_table(
    resp: pa.Table, resp_bad: int, want_text: bool, quality: DataQuality,
    vocabs: tuple[Vocabulary, Vocabulary, Vocabulary, Vocabulary],
) -> pd.DataFrame:
    """Phase 4: the last valid record per response (its text only when wanted)."""
    datapoint_ids, tasks, models, response_ids = vocabs
    resp_failed = _failed_status(resp)
    resp_rows = _last_valid(_id_codes(resp), ~resp_failed) if resp.num_rows else np.zeros(0, np.int64)
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
            "datapoint": encode(_text(resp, "datapoint_id"), datapoint_ids)[resp_rows],
            "task": _cat(encode(_text(resp, "task_id"), tasks)[resp_rows], tasks),
            "teacher": _cat(encode(_text(resp, "teacher_model_id"), models)[resp_rows], models),
            "student": _cat(encode(_text(resp, "student_model_id"), models)[resp_rows], models),
            "length": lengths[resp_rows],
            "failed": resp_failed[resp_rows],
        },
        index=pd.Index(encode(_text(resp, "id"), response_ids)[resp_rows], name="response"),
    )
    if want_text and resp.num_rows:
        responses["text"] = resp.column("response").take(pa.array(resp_rows)).to_pylist()
    return responses


def _record_fields(
    kept_codes: Callable[..., np.ndarray], responses: pd.DataFrame, n_kept: int,
    vocabs: tuple[Vocabulary, Vocabulary, Vocabulary, Vocabulary],
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Codes of who answered what for each kept evaluation: from its response record when
    that resolves, from the evaluation's own fields otherwise."""
    datapoint_ids, tasks, models, response_ids = vocabs
    rec = {"response": kept_codes("response_id", response_ids), "judge": kept_codes("judge_model_id", models)}
    position = np.full(len(response_ids) + 1, -1, np.int64)  # code -1 -> last slot -> -1
    position[responses.index.to_numpy()] = np.arange(len(responses))
    pos = position[rec["response"]]
    has_resp = pos >= 0
    pos_i = np.where(has_resp, pos, 0)
    for col, field, vocab in (
        ("datapoint", "datapoint_id", datapoint_ids),
        ("task", "task_id", tasks),
        ("teacher", "teacher_model_id", models),
        ("student", "student_model_id", models),
    ):
        src = responses[col].to_numpy() if col == "datapoint" else responses[col].cat.codes.to_numpy()
        out = np.full(n_kept, -1, np.int32)
        out[has_resp] = src[pos[has_resp]]
        rest = np.flatnonzero(out < 0)
        if len(rest):
            out[rest] = kept_codes(field, vocab, rest)
        rec[col] = out
    return rec, pos_i, has_resp


def _kept_evaluations(
    ev: pa.Table, s_rows: np.ndarray, bad: np.ndarray, quality: DataQuality
) -> tuple[np.ndarray, np.ndarray]:
    """Which evaluation records failed (no usable score counts as failed) and which rows
    stand for their id (the last valid one); counts duplicates and superseded failures."""
    n = ev.num_rows
    usable = np.bincount(s_rows[~bad], minlength=n)
    failed = _failed_status(ev) | (usable == 0)
    ids = _id_codes(ev)
    kept = _last_valid(ids, ~failed)
    quality.n_duplicates = n - len(kept)
    if quality.n_duplicates:
        dropped = np.ones(n, bool)
        dropped[kept] = False
        id_has_valid = np.zeros(int(ids.max()) + 1, bool)
        id_has_valid[ids[kept][~failed[kept]]] = True
        quality.n_superseded_failures = int(id_has_valid[ids[dropped & failed]].sum())
    return failed, kept


def _count_invalid_scores(s_values: pa.Array, bad: np.ndarray, quality: DataQuality) -> None:
    """How many score values could not be read, and the 20 most common of them."""
    invalid = (
        Counter(_short(v) for v in s_values.filter(pa.array(bad)).to_pylist()) if bad.any() else Counter()
    )
    quality.n_invalid_scores = int(bad.sum())
    quality.invalid_values = dict(invalid.most_common(20))


def evaluation_files(root: Path) -> list[Path]:
    """The run's phase-5 files; a clear error (listing the runs inside a storage folder) when none."""
    if not root.is_dir():
        raise AnalysisInputError(f"{root}: no such run folder")
    eval_files = jsonl_files(root, PHASE5)
    if eval_files:
        return eval_files
    hint = storage_folder_hint(root)
    if hint is not None:
        raise AnalysisInputError(f"{root}: not a run folder; {hint}")
    raise AnalysisInputError(
        f"{root / PHASE5}: no evaluation files (*.jsonl); a run needs phase 5 before it can be analysed"
    )


_ROLE_FIELD = {"teacher": "teacher_model_id", "student": "student_model_id", "judge": "judge_model_id"}


def left_out_by_config(meta: dict[str, Any], config: dict[str, Any]) -> dict[str, set[str]]:
    """role -> models that made records in that role (``meta.json`` settings) but that the
    run's config snapshot no longer has in it (removed, or the role taken away, and let
    through with ``--allow-drift``): their records stay on disk, and status and analysis
    both leave them out."""
    recorded = (meta.get("settings") or {}).get("models") if isinstance(meta.get("settings"), dict) else None
    models = config.get("models")
    if not isinstance(recorded, dict) or not recorded or not isinstance(models, list):
        return {}
    current = {str(m.get("name")): {str(r) for r in (m.get("roles") or [])} for m in models if isinstance(m, dict)}
    out: dict[str, set[str]] = {}
    for name, entry in recorded.items():
        roles = entry.get("roles") if isinstance(entry, dict) else None
        for role in roles or ():
            if role in _ROLE_FIELD and role not in current.get(str(name), set()):
                out.setdefault(role, set()).add(str(name))
    return out


def _without_models(table: pa.Table, left_out: dict[str, set[str]]) -> tuple[pa.Table, int]:
    """``table`` less the rows made by a left-out model in its left-out role, and how many."""
    drop = None
    for role, names in left_out.items():
        field = _ROLE_FIELD[role]
        if field not in table.column_names or not names:
            continue
        hit = pc.fill_null(pc.is_in(table.column(field), value_set=pa.array(sorted(names), pa.string())), False)
        drop = hit if drop is None else pc.or_(drop, hit)
    if drop is None:
        return table, 0
    n = int(pc.sum(drop).as_py() or 0)
    return (table.filter(pc.invert(drop)), n) if n else (table, 0)


def _leave_out_removed(
    ev: pa.Table, meta: dict[str, Any], config: dict[str, Any], quality: DataQuality
) -> tuple[pa.Table, dict[str, set[str]]]:
    """The evaluation records less those of models the config snapshot left out (counted in
    ``quality``), and what was left out, for the other phases' records."""
    left_out = left_out_by_config(meta, config)
    ev, quality.n_left_out_by_config = _without_models(ev, left_out)
    quality.left_out_models = {role: sorted(names) for role, names in sorted(left_out.items())}
    return ev, left_out


def load_run(path: str | Path, *, keep_response_text: bool = False) -> RunData:
    """Load a run folder. Raises :class:`AnalysisInputError` when it is not one."""
    root = Path(path)
    eval_files = evaluation_files(root)
    meta_path = RunFolder(root).meta_path
    meta = _read_json(meta_path) or {}
    if not isinstance(meta, dict):
        raise AnalysisInputError(f"{meta_path}: must be a JSON object")
    config = _read_config(root)
    rubrics = _task_rubrics(root, config)
    target_attrs = _target_attributes(root, config)
    label_attrs = _label_attributes(config)
    quality = DataQuality()

    # ---- read the three phases -------------------------------------------------------
    ev, ev_bad = read_records(
        eval_files, {**_EVAL_COLUMNS, "rationale": JSON_TEXT}, {**_ID_HASH, **REPLY_FLAG_COLUMNS}, hidden=("rationale",)
    )
    quality.n_records, quality.n_bad_lines = ev.num_rows, ev_bad
    ev, left_out = _leave_out_removed(ev, meta, config, quality)
    if ev.num_rows == 0:
        raise AnalysisInputError(f"{root / PHASE5}: the evaluation files hold no records")
    has_labels = bool(pc.any(pc.equal(ev.column("evaluator"), "label")).as_py())
    want_text = keep_response_text or has_labels
    resp, resp_bad = read_records(
        jsonl_files(root, PHASE4),
        {**_RESP_COLUMNS, "response": TEXT},
        {"length": "length(response)", **_ID_HASH},
        hidden=() if want_text else ("response",),
    )
    dps, dp_bad = read_records(jsonl_files(root, PHASE3), _DP_COLUMNS, _ID_HASH)
    resp, dps = _without_models(resp, left_out)[0], _without_models(dps, left_out)[0]

    # ---- vocabularies shared by all tables ---------------------------------------------
    models = Vocabulary(
        _text(ev, "judge_model_id") + _text(ev, "student_model_id") + _text(ev, "teacher_model_id")
        + _text(resp, "student_model_id") + _text(resp, "teacher_model_id") + _text(dps, "teacher_model_id")
    )  # fmt: skip
    tasks = Vocabulary(_text(ev, "task_id") + _text(resp, "task_id") + _text(dps, "task_id"))
    response_ids = Vocabulary(_text(resp, "id") + _text(ev, "response_id"))
    datapoint_ids = Vocabulary(_text(dps, "id") + _text(resp, "datapoint_id") + _text(ev, "datapoint_id"))

    # ---- datapoints --------------------------------------------------------------------
    datapoints, attributes, gold_by_dp = _datapoint_tables(dps, dp_bad, quality, datapoint_ids, tasks, models)

    # ---- responses ---------------------------------------------------------------------
    responses = _response_table(resp, resp_bad, want_text, quality, (datapoint_ids, tasks, models, response_ids))

    # ---- evaluation records: failures and duplicates -----------------------------------
    n = ev.num_rows
    s_rows, s_keys, s_values = map_entries(ev.column("scores"))
    s_value, s_level = _parse_scores(s_values)
    bad = np.isnan(s_value)
    failed, kept = _kept_evaluations(ev, s_rows, bad, quality)

    # Who answered what comes from the response record (phase 4) when the evaluation's
    # response resolves; the evaluation's own fields are used otherwise (old records lack
    # student_model_id). Only those few records need their strings encoded.
    kept_arr = pa.array(kept)

    def kept_codes(field: str, vocab: Vocabulary, rows: np.ndarray | None = None) -> np.ndarray:
        col = ev.column(field).take(kept_arr if rows is None else pa.array(kept[rows]))
        return encode(col.chunks, vocab)

    vocabs = (datapoint_ids, tasks, models, response_ids)
    rec, pos_i, has_resp = _record_fields(kept_codes, responses, len(kept), vocabs)

    rec_failed = failed[kept]
    orphan = ~rec_failed & ((rec["response"] < 0) | (rec["student"] < 0) | (rec["judge"] < 0))
    quality.n_orphaned = int(orphan.sum())
    quality.n_failed = int(rec_failed.sum())
    if len(responses):
        resp_failed_kept = responses["failed"].to_numpy()[pos_i]
        quality.n_failed_responses_scored = int((~rec_failed & has_resp & resp_failed_kept).sum())
    records = pd.DataFrame(
        {
            "response": rec["response"],
            "datapoint": rec["datapoint"],
            "task": _cat(rec["task"], tasks),
            "teacher": _cat(rec["teacher"], models),
            "student": _cat(rec["student"], models),
            "judge": _cat(rec["judge"], models),
            "evaluator": pd.Categorical(_evaluators(ev, kept)),
            "failed": rec_failed,
            "orphaned": orphan,
            "error_kind": pd.Categorical(_error_kinds(ev, kept)),
        }
    )

    # ---- score units -------------------------------------------------------------------
    _count_invalid_scores(s_values, bad, quality)
    factor_enc = pc.dictionary_encode(s_keys)
    factor_names = Vocabulary([factor_enc.dictionary])
    factor = pc.fill_null(factor_enc.indices, -1).to_numpy().astype(np.int64)
    units = _units(s_rows[~bad], factor[~bad], s_value[~bad], s_level[~bad], kept, n, records, factor_names,
                   rubrics, quality)  # fmt: skip
    labels = _label_details(ev, kept, records, units, responses, gold_by_dp, attributes)
    _check_completeness(units, records, rubrics, label_attrs, quality)

    return RunData(
        path=root,
        experiment_id=str(meta.get("experiment_id") or root.name),
        meta=meta,
        config=config,
        rubrics=rubrics,
        target_attributes=target_attrs,
        label_attributes=label_attrs,
        models=models.index,
        response_ids=response_ids.index,
        datapoint_ids=datapoint_ids.index,
        records=records,
        units=units,
        responses=responses,
        datapoints=datapoints,
        attributes=attributes,
        labels=labels,
        quality=quality,
        replies=replies_frame(ev, response_ids),
    )


# --------------------------------------------------------------------------------------


def _evaluators(ev: pa.Table, kept: np.ndarray) -> np.ndarray:
    """Each kept record's evaluator: its ``evaluator`` field, or for old records one
    derived from ``judge_model_id`` (label, gold, metric..., else an LLM judge)."""
    take = pa.array(kept)
    given = pc.dictionary_encode(ev.column("evaluator").combine_chunks().take(take))
    judge = pc.dictionary_encode(ev.column("judge_model_id").combine_chunks().take(take))

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


def _error_kinds(ev: pa.Table, kept: np.ndarray) -> np.ndarray:
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
    empty = pd.DataFrame({"datapoint": np.zeros(0, np.int32), "task": _cat([], tasks),
                          "attribute": pd.Categorical([]), "value": pd.Categorical([])})  # fmt: skip
    if dps.num_rows == 0:
        return empty
    rows, keys, values = map_entries(dps.column("sampled_target_attributes"))
    keep = np.zeros(dps.num_rows, bool)
    keep[dp_rows] = True
    sel = keep[rows] & pc.is_valid(values).to_numpy(zero_copy_only=False)
    if not sel.any():
        return empty
    mask = pa.array(sel)
    task_codes = encode(_text(dps, "task_id"), tasks)
    return pd.DataFrame(
        {
            "datapoint": dp_codes[rows[sel]],
            "task": _cat(task_codes[rows[sel]], tasks),
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


def _units(
    rows: np.ndarray,
    factor: np.ndarray,
    value: np.ndarray,
    level: np.ndarray,
    kept: np.ndarray,
    n_raw: int,
    records: pd.DataFrame,
    factor_names: Vocabulary,
    rubrics: dict[str, dict[str, Any]],
    quality: DataQuality,
) -> pd.DataFrame:
    """One row per usable score of a kept, valid, resolved record."""
    row_of_raw = np.full(n_raw, -1, np.int64)
    row_of_raw[kept] = np.arange(len(kept))
    row = row_of_raw[rows]
    usable_rec = ~(records["failed"].to_numpy() | records["orphaned"].to_numpy())
    ok = row >= 0
    ok[ok] = usable_rec[row[ok]]
    row, factor, value, level = row[ok], factor[ok], value[ok], level[ok]
    names = list(factor_names.index)

    # LLM-judge scores of factors outside the task's rubric
    ev_cats = list(records["evaluator"].cat.categories)
    llm_code = ev_cats.index(LLM_JUDGE) if LLM_JUDGE in ev_cats else -2
    is_llm = records["evaluator"].cat.codes.to_numpy()[row] == llm_code
    task_codes = records["task"].cat.codes.to_numpy()[row]
    allowed = np.ones(len(row), bool)
    unknown: Counter[str] = Counter()
    for t_code, t_name in enumerate(records["task"].cat.categories):
        rubric = rubrics.get(str(t_name))
        if rubric is None or not names:
            continue
        good = np.array([f in rubric for f in names], bool)
        bad = is_llm & (task_codes == t_code) & ~good[factor]
        if bad.any():
            allowed &= ~bad
            for code, cnt in zip(*np.unique(factor[bad], return_counts=True), strict=True):
                unknown[names[code]] += int(cnt)
    quality.n_unknown_factor_scores = sum(unknown.values())
    quality.unknown_factors = dict(unknown.most_common(20))
    row, factor, value, level = row[allowed], factor[allowed], value[allowed], level[allowed]

    # one score per (response, judge, factor): the last record wins. Only (response, judge)
    # pairs with several records (per_factor mode, re-runs) can repeat a factor.
    n_j = len(records["judge"].cat.categories) + 1
    rec_pair = records["response"].to_numpy().astype(np.int64) * n_j + records["judge"].cat.codes.to_numpy()
    multi = pd.Series(rec_pair).duplicated(keep=False).to_numpy()
    check = multi[row]
    if check.any():
        key = rec_pair[row[check]] * (len(names) + 1) + factor[check]
        dup = np.zeros(len(row), bool)
        dup[np.flatnonzero(check)[pd.Series(key).duplicated(keep="last").to_numpy()]] = True
        quality.n_duplicate_scores = int(dup.sum())
        row, factor, value, level = row[~dup], factor[~dup], value[~dup], level[~dup]

    return pd.DataFrame(
        {
            "response": records["response"].to_numpy()[row],
            "datapoint": records["datapoint"].to_numpy()[row],
            "task": _take_cat(records["task"], row),
            "teacher": _take_cat(records["teacher"], row),
            "student": _take_cat(records["student"], row),
            "judge": _take_cat(records["judge"], row),
            "evaluator": _take_cat(records["evaluator"], row),
            "factor": pd.Categorical.from_codes(
                factor.astype(np.int32), categories=factor_names.index, validate=False
            ),
            "value": value.astype(np.float32),
            "level": level,
        }
    )


def _as_labels(v: Any) -> tuple[str, ...]:
    if v is None:
        return ()
    if isinstance(v, list | tuple):
        return tuple(str(x) for x in v if x is not None)
    return (str(v),)


def _label_details(
    ev: pa.Table,
    kept: np.ndarray,
    records: pd.DataFrame,
    units: pd.DataFrame,
    responses: pd.DataFrame,
    gold_by_dp: dict[int, Any],
    attributes: pd.DataFrame,
) -> pd.DataFrame:
    """Gold and predicted labels per (response, attribute) of label-evaluator records.

    Taken from the record's ``gold`` / ``predicted`` mappings when it has them; otherwise
    recomputed as the label evaluator scores: the gold is the datapoint's sampled value of
    the attribute (else its ``labels`` / ``label``), the prediction is the whole answer,
    normalised (:func:`coeval_analysis.labels.normalise_label`).
    """
    cols: dict[str, list[Any]] = {
        k: [] for k in ("response", "student", "task", "attribute", "gold", "predicted")
    }
    lab = units[units["evaluator"] == "label"]
    if lab.empty:
        return pd.DataFrame(cols)
    # explicit details on the records, keyed by (response, judge)
    detail: dict[tuple[int, int], tuple[Any, Any]] = {}
    is_label = (records["evaluator"] == "label").to_numpy()
    for r in np.flatnonzero(is_label):
        g = ev.column("gold")[int(kept[r])].as_py()
        p = ev.column("predicted")[int(kept[r])].as_py()
        if g is not None or p is not None:
            key = (int(records["response"].iat[r]), int(records["judge"].cat.codes[r]))
            detail[key] = (json.loads(g) if g else None, json.loads(p) if p else None)
    sampled = {
        (int(d), str(a)): str(v)
        for d, a, v in zip(attributes["datapoint"], attributes["attribute"], attributes["value"], strict=True)
    }
    texts = responses["text"] if "text" in responses.columns else None
    judge_codes = lab["judge"].cat.codes.to_numpy()
    for resp, dp, student, task, attr, jc in zip(
        lab["response"],
        lab["datapoint"],
        lab["student"],
        lab["task"],
        lab["factor"],
        judge_codes,
        strict=True,
    ):
        g_map, p_map = detail.get((int(resp), int(jc)), (None, None))
        gold = _as_labels(g_map.get(attr)) if isinstance(g_map, dict) else ()
        if not gold and (int(dp), str(attr)) in sampled:
            gold = (sampled[(int(dp), str(attr))],)
        if not gold:
            dp_gold = gold_by_dp.get(int(dp))
            gold = _as_labels(dp_gold.get(attr)) if isinstance(dp_gold, dict) else _as_labels(dp_gold)
        if isinstance(p_map, dict) and attr in p_map:
            pred = _as_labels(p_map.get(attr))
        else:
            text = texts.get(int(resp)) if texts is not None else None
            answer = normalise_label(text or "")
            pred = (answer,) if answer else ()
        cols["response"].append(int(resp))
        cols["student"].append(str(student))
        cols["task"].append(str(task))
        cols["attribute"].append(str(attr))
        cols["gold"].append(tuple(gold))
        cols["predicted"].append(tuple(pred))
    return pd.DataFrame(cols)


def _check_completeness(
    units: pd.DataFrame,
    records: pd.DataFrame,
    rubrics: dict[str, dict[str, Any]],
    label_attrs: dict[str, list[str]],
    quality: DataQuality,
) -> None:
    """Count (response, judge) pairs of LLM judges lacking some LLM factor of the rubric.

    Expected factors are the rubric's factors without a ``metric`` and that are not label
    attributes: metric and label evaluators score those, so a mixed rubric is complete."""
    usable = (records["evaluator"] == LLM_JUDGE).to_numpy() & ~records["failed"].to_numpy()
    usable &= ~records["orphaned"].to_numpy()
    if not usable.any():
        return
    n_j = len(records["judge"].cat.categories) + 1
    rec_pair = records["response"].to_numpy().astype(np.int64) * n_j + records["judge"].cat.codes.to_numpy()
    rec_task = records["task"].cat.codes.to_numpy()
    llm = (units["evaluator"] == LLM_JUDGE).to_numpy()
    u_pair = (
        units["response"].to_numpy().astype(np.int64)[llm] * n_j + units["judge"].cat.codes.to_numpy()[llm]
    )
    u_task = units["task"].cat.codes.to_numpy()[llm]
    u_factor = units["factor"].cat.codes.to_numpy()[llm]
    factor_names = list(units["factor"].cat.categories)
    missing: Counter[str] = Counter()
    n_incomplete = 0
    for t_code, task in enumerate(records["task"].cat.categories):
        rubric = rubrics.get(str(task))
        if not rubric:
            continue
        labels = set(label_attrs.get(str(task), []))
        expected = [f for f in llm_factors(rubric) if f not in labels]
        if not expected:
            continue
        task_pairs = rec_pair[usable & (rec_task == t_code)]
        if len(task_pairs) == 0:
            continue
        codes = [factor_names.index(f) for f in expected if f in factor_names]
        sel = (u_task == t_code) & np.isin(u_factor, codes)
        # units are unique per (pair, factor), so the count per pair is the factors scored
        pairs, counts = _pair_counts(task_pairs, u_pair[sel])
        n_pairs = len(pairs)
        n_incomplete += int((counts < len(expected)).sum())
        per_factor = np.bincount(u_factor[sel], minlength=len(factor_names))
        for f in expected:
            have = int(per_factor[factor_names.index(f)]) if f in factor_names else 0
            if n_pairs > have:
                missing[f] += n_pairs - have
    quality.n_incomplete = n_incomplete
    quality.missing_factors = dict(missing.most_common())


def _pair_counts(pairs: np.ndarray, found: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct ``pairs``, how often each occurs in ``found``); dense counting when the
    keys are small, sorting otherwise."""
    span = int(max(pairs.max(), found.max() if len(found) else 0)) + 1
    if span <= 50_000_000:
        present = np.flatnonzero(np.bincount(pairs, minlength=span))
        return present, np.bincount(found, minlength=span)[present]
    uniq = np.unique(pairs)
    pos = np.searchsorted(uniq, found)
    hit = (pos < len(uniq)) & (uniq[np.minimum(pos, len(uniq) - 1)] == found)
    return uniq, np.bincount(pos[hit], minlength=len(uniq))
