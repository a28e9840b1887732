"""Load a run folder (ours or the earlier tool's) into :class:`~coeval_analysis.data.RunData`.

Rules, each applied deliberately and counted in :class:`~coeval_analysis.data.DataQuality`:

* A line that is not a JSON object is skipped (a crash can cut the last line of a file).
* Records sharing an ``id``: the last *valid* one wins (the last one if none is valid);
  the others are counted as duplicates. The earlier tool reused ids on Extend.
* A record is failed when its ``status`` is ``failed`` or it has no usable score (old
  records have no status). Failed records count towards judge failure rates, never as Low.
* Records without ``student_model_id`` (old format) get the student of their response in
  phase 4; records whose response or student cannot be resolved are orphaned.
* Score values are High/Medium/Low (1/0.5/0) or numbers in [0, 1] (also as strings);
  anything else is an invalid score, dropped and counted by value.
* LLM-judge scores must name a factor of the task's rubric (when the rubric is known).
  Metric factors (``{metric: ...}`` in the rubric) are scored by metric evaluators, not by
  judges, so a mixed rubric never makes a judge record incomplete.
* ``per_factor`` records are merged by (response, judge); a (response, judge, factor)
  scored twice keeps the last score.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import yaml

from coeval_analysis._arrow import StringCodes, encode, read_jsonl, string_column, struct_children
from coeval_analysis.data import LLM_JUDGE, DataQuality, PhaseQuality, RunData
from coeval_analysis.errors import AnalysisInputError

__all__ = ["load_run", "parse_score"]

PHASE3 = "phase3_datapoints"
PHASE4 = "phase4_responses"
PHASE5 = "phase5_evaluations"

_LEVELS = {"low": (0.0, 0), "medium": (0.5, 1), "high": (1.0, 2)}
_NON_LLM = {"label", "metric", "gold"}

_EVAL_COLUMNS = [
    "id",
    "response_id",
    "datapoint_id",
    "task_id",
    "teacher_model_id",
    "student_model_id",
    "judge_model_id",
    "evaluator",
    "status",
    "error",
    "scores",
]
_LABEL_COLUMNS = ["gold", "predicted"]
_RESP_COLUMNS = ["id", "datapoint_id", "task_id", "teacher_model_id", "student_model_id", "status"]
_DP_COLUMNS = ["id", "task_id", "teacher_model_id", "status"]


def parse_score(raw: Any) -> tuple[float, int]:
    """(value in [0, 1], level) of one score; level is 0/1/2 for Low/Medium/High, -1 for
    other numbers; (nan, -1) when the value is not a score."""
    if isinstance(raw, bool):
        return float("nan"), -1
    if isinstance(raw, int | float):
        v = float(raw)
    elif isinstance(raw, str):
        text = raw.strip().lower()
        if text in _LEVELS:
            return _LEVELS[text]
        try:
            v = float(text)
        except ValueError:
            return float("nan"), -1
    else:
        return float("nan"), -1
    if not (0.0 <= v <= 1.0):
        return float("nan"), -1
    level = {0.0: 0, 0.5: 1, 1.0: 2}.get(v, -1)
    return v, level


# --------------------------------------------------------------------------------------
# phase files


def _jsonl_files(root: Path, phase: str) -> list[Path]:
    folder = root / phase
    return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []


class _PhaseTable:
    """String columns of one phase's records, concatenated in file order."""

    def __init__(self, columns: Sequence[str]) -> None:
        self.raw: dict[str, list[pa.Array]] = {c: [] for c in columns}
        self.n = 0
        self.bad = 0

    def add(self, table: pa.Table) -> None:
        for name, chunks in self.raw.items():
            chunks.extend(string_column(table, name).chunks)
        self.n += table.num_rows


def _read_phase(
    root: Path,
    phase: str,
    columns: Sequence[str],
    extra: Sequence[str] = (),
    on_table: Callable[[pa.Table, int], None] | None = None,
) -> _PhaseTable:
    """Read every JSONL file of a phase once; ``on_table(table, offset)`` sees the
    ``extra`` columns (nested or long ones) before they are dropped."""
    out = _PhaseTable(columns)
    for path in _jsonl_files(root, phase):
        table, bad = read_jsonl(path, [*columns, *extra])
        out.bad += bad
        if table.num_rows == 0:
            continue
        if on_table is not None:
            on_table(table, out.n)
        out.add(table)
    return out


def _strings(chunks: list[pa.Array], n: int) -> pa.Array:
    if not chunks:
        return pa.nulls(n, pa.string())
    return pa.chunked_array(chunks, pa.string()).combine_chunks() if n else pa.array([], pa.string())


def _id_codes(chunks: list[pa.Array], n: int) -> np.ndarray:
    """Codes that are equal exactly when ids are; a null id is unique."""
    arr = _strings(chunks, n)
    enc = pc.dictionary_encode(arr)
    codes = pc.fill_null(enc.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    missing = codes < 0
    if missing.any():
        codes[missing] = len(enc.dictionary) + np.arange(int(missing.sum()))
    return codes


def _last_valid(ids: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Row indices kept by "the last valid record of an id wins (else the last)"."""
    if len(ids) == 0:
        return np.zeros(0, np.int64)
    seq = np.arange(len(ids))
    order = np.lexsort((seq, valid, ids))
    sorted_ids = ids[order]
    last = np.r_[sorted_ids[1:] != sorted_ids[:-1], True]
    return np.sort(order[last])


# --------------------------------------------------------------------------------------
# scores


class _Scores:
    """Long-format scores collected file by file."""

    def __init__(self) -> None:
        self.seq: list[np.ndarray] = []
        self.factor: list[np.ndarray] = []
        self.value: list[np.ndarray] = []
        self.level: list[np.ndarray] = []
        self.n_usable: list[np.ndarray] = []
        self.factors: dict[str, int] = {}
        self.invalid: Counter[str] = Counter()
        self.invalid_by_factor: Counter[str] = Counter()
        self.label_rows: list[tuple[int, Any, Any]] = []

    def add_table(self, table: pa.Table, offset: int) -> None:
        n = table.num_rows
        usable = np.zeros(n, np.int32)
        for name, child in struct_children(table, "scores"):
            values, levels, present = _child_scores(child)
            if not present.any():
                continue
            bad = present & np.isnan(values)
            if bad.any():
                raw = child.filter(pa.array(bad))
                for v in raw.to_pylist():
                    self.invalid[_short(v)] += 1
                self.invalid_by_factor[name] += int(bad.sum())
            ok = present & ~bad
            rows = np.flatnonzero(ok)
            if len(rows) == 0:
                continue
            code = self.factors.setdefault(name, len(self.factors))
            usable[rows] += 1
            self.seq.append(rows.astype(np.int64) + offset)
            self.factor.append(np.full(len(rows), code, np.int32))
            self.value.append(values[rows].astype(np.float32))
            self.level.append(levels[rows])
        self.n_usable.append(usable)
        if "gold" in table.column_names or "predicted" in table.column_names:
            gold = table.column("gold").to_pylist() if "gold" in table.column_names else [None] * n
            pred = table.column("predicted").to_pylist() if "predicted" in table.column_names else [None] * n
            for i, (g, p) in enumerate(zip(gold, pred, strict=True)):
                if isinstance(g, dict) or isinstance(p, dict):
                    self.label_rows.append((offset + i, g, p))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if not self.seq:
            return (
                np.zeros(0, np.int64),
                np.zeros(0, np.int32),
                np.zeros(0, np.float32),
                np.zeros(0, np.int8),
            )
        return (
            np.concatenate(self.seq),
            np.concatenate(self.factor),
            np.concatenate(self.value),
            np.concatenate(self.level),
        )


def _short(v: Any) -> str:
    text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def _child_scores(child: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, levels, present) of one factor's column of scores."""
    n = len(child)
    present = child.is_valid().to_numpy(zero_copy_only=False)
    t = child.type
    if pa.types.is_null(t):
        return np.full(n, np.nan), np.full(n, -1, np.int8), np.zeros(n, bool)
    if pa.types.is_struct(t):
        names = [t.field(i).name for i in range(t.num_fields)]
        for key in ("score", "value", "label"):
            if key in names:
                inner = pc.struct_field(child, [names.index(key)])
                v, lv, _p = _child_scores(inner)
                return v, lv, present
        return np.full(n, np.nan), np.full(n, -1, np.int8), present
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        enc = pc.dictionary_encode(child)
        table = [parse_score(s) for s in enc.dictionary.to_pylist()]
        vals = np.array([v for v, _ in table] + [np.nan], np.float64)
        lvls = np.array([lv for _, lv in table] + [-1], np.int8)
        idx = pc.fill_null(enc.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
        return vals[idx], lvls[idx], present
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        vals = pc.cast(child, pa.float64()).to_numpy(zero_copy_only=False)
        vals = np.where(present, vals, np.nan)
        vals = np.where((vals >= 0) & (vals <= 1), vals, np.nan)
        lv = np.full(n, -1, np.int8)
        lv[vals == 0.0] = 0
        lv[vals == 0.5] = 1
        lv[vals == 1.0] = 2
        return vals, lv, present
    return np.full(n, np.nan), np.full(n, -1, np.int8), present


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
    path = root / "config.yaml"
    if not path.exists():
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise AnalysisInputError(f"{path}: not valid YAML ({exc})") from None
    return data if isinstance(data, dict) else {}


def _task_rubrics(root: Path, config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    rubrics: dict[str, dict[str, Any]] = {}
    for task in config.get("tasks", []) or []:
        if isinstance(task, dict) and isinstance(task.get("rubric"), dict):
            rubrics[str(task.get("name"))] = dict(task["rubric"])
    folder = root / "phase2_rubric"
    if folder.is_dir():
        for path in sorted(folder.glob("*.rubric.json")):
            data = _read_json(path)
            if not isinstance(data, dict):
                raise AnalysisInputError(f"{path}: a rubric must be a JSON object of factor -> criterion")
            rubrics[path.name[: -len(".rubric.json")]] = data
    return rubrics


def _target_attributes(root: Path, config: dict[str, Any]) -> dict[str, dict[str, list[str]]]:
    out: dict[str, dict[str, list[str]]] = {}
    for task in config.get("tasks", []) or []:
        if isinstance(task, dict) and isinstance(task.get("target_attributes"), dict):
            out[str(task.get("name"))] = {
                str(k): [str(v) for v in vs] for k, vs in task["target_attributes"].items()
            }
    folder = root / "phase1_attributes"
    if folder.is_dir():
        for path in sorted(folder.glob("*.target_attrs.json")):
            data = _read_json(path)
            if isinstance(data, dict):
                out[path.name[: -len(".target_attrs.json")]] = {
                    str(k): [str(v) for v in (vs if isinstance(vs, list) else [vs])] for k, vs in data.items()
                }
    return out


def _label_attributes(config: dict[str, Any]) -> dict[str, list[str]]:
    out = {}
    for task in config.get("tasks", []) or []:
        if isinstance(task, dict) and task.get("label_attributes"):
            out[str(task.get("name"))] = [str(a) for a in task["label_attributes"]]
    return out


def llm_factors(rubric: dict[str, Any]) -> list[str]:
    """Rubric factors a judge scores (those without a ``metric``)."""
    return [f for f, spec in rubric.items() if not (isinstance(spec, dict) and spec.get("metric"))]


# --------------------------------------------------------------------------------------
# the loader


def load_run(path: str | Path, *, keep_response_text: bool = False) -> RunData:
    """Load a run folder. Raises :class:`AnalysisInputError` when it is not one."""
    root = Path(path)
    if not root.is_dir():
        raise AnalysisInputError(f"{root}: no such run folder")
    if not (root / PHASE5).is_dir() or not _jsonl_files(root, PHASE5):
        raise AnalysisInputError(
            f"{root / PHASE5}: no evaluation files (*.jsonl); a run needs phase 5 before it can be analysed"
        )
    meta = _read_json(root / "meta.json") or {}
    if not isinstance(meta, dict):
        raise AnalysisInputError(f"{root / 'meta.json'}: must be a JSON object")
    config = _read_config(root)
    rubrics = _task_rubrics(root, config)
    target_attrs = _target_attributes(root, config)
    label_attrs = _label_attributes(config)
    quality = DataQuality()

    # ---- phase 5 -----------------------------------------------------------------------
    scores = _Scores()
    ev = _read_phase(root, PHASE5, _EVAL_COLUMNS[:-1], ["scores", *_LABEL_COLUMNS], scores.add_table)
    quality.n_records = ev.n
    quality.n_bad_lines = ev.bad
    if ev.n == 0:
        raise AnalysisInputError(f"{root / PHASE5}: the evaluation files hold no records")
    n_usable = np.concatenate(scores.n_usable) if scores.n_usable else np.zeros(ev.n, np.int32)
    status = _strings(ev.raw["status"], ev.n)
    failed = pc.fill_null(pc.equal(pc.utf8_lower(status), "failed"), False).to_numpy(zero_copy_only=False)
    failed = failed | (n_usable == 0)
    ids = _id_codes(ev.raw["id"], ev.n)
    kept = _last_valid(ids, ~failed)
    quality.n_duplicates = ev.n - len(kept)
    if quality.n_duplicates:
        dropped = np.ones(ev.n, bool)
        dropped[kept] = False
        kept_valid_ids = set(ids[kept][~failed[kept]].tolist())
        drop_idx = np.flatnonzero(dropped & failed)
        quality.n_superseded_failures = int(np.isin(ids[drop_idx], list(kept_valid_ids)).sum())

    # ---- phase 4 and 3 (shared id vocabularies) ----------------------------------------
    want_text = keep_response_text or _has_label_records(ev)
    length_parts: list[np.ndarray] = []
    texts: list[pa.Array] = []

    def on_resp_table(table: pa.Table, offset: int) -> None:
        col = string_column(table, "response")
        length_parts.append(pc.utf8_length(col).to_numpy(zero_copy_only=False).astype(np.float64))
        if want_text:
            texts.extend(col.chunks)

    resp = _read_phase(root, PHASE4, _RESP_COLUMNS, ["response"], on_resp_table)
    resp_lengths = np.concatenate(length_parts) if length_parts else np.zeros(0)
    dp_attr_rows: list[tuple[int, str, str]] = []
    dp_labels: dict[int, Any] = {}

    def on_dp_table(table: pa.Table, offset: int) -> None:
        for attr, child in struct_children(table, "sampled_target_attributes"):
            values = child.to_pylist()
            for i, v in enumerate(values):
                if v is not None:
                    dp_attr_rows.append((offset + i, attr, v if isinstance(v, str) else json.dumps(v)))
        for key in ("labels", "label"):
            if key in table.column_names:
                for i, v in enumerate(table.column(key).to_pylist()):
                    if v is not None:
                        dp_labels.setdefault(offset + i, v)

    dps = _read_phase(
        root, PHASE3, _DP_COLUMNS, ["sampled_target_attributes", "label", "labels"], on_dp_table
    )

    # vocabularies
    models = _vocab(
        ev.raw["judge_model_id"]
        + ev.raw["student_model_id"]
        + ev.raw["teacher_model_id"]
        + resp.raw["student_model_id"]
        + resp.raw["teacher_model_id"]
        + dps.raw["teacher_model_id"]
    )
    tasks = _vocab(ev.raw["task_id"] + resp.raw["task_id"] + dps.raw["task_id"])
    response_ids = _vocab(resp.raw["id"] + ev.raw["response_id"])
    datapoint_ids = _vocab(dps.raw["id"] + resp.raw["datapoint_id"] + ev.raw["datapoint_id"])

    # ---- datapoints --------------------------------------------------------------------
    dp_failed = _failed_status(dps.raw["status"], dps.n)
    dp_rows = _last_valid(_id_codes(dps.raw["id"], dps.n), ~dp_failed) if dps.n else np.zeros(0, np.int64)
    quality.phase3 = PhaseQuality(dps.n, dps.bad, dps.n - len(dp_rows), int(dp_failed[dp_rows].sum()))
    datapoints = pd.DataFrame(
        {
            "task": _cat(encode(dps.raw["task_id"], tasks)[dp_rows] if dps.n else [], tasks),
            "teacher": _cat(encode(dps.raw["teacher_model_id"], models)[dp_rows] if dps.n else [], models),
            "failed": dp_failed[dp_rows],
        },
        index=pd.Index(encode(dps.raw["id"], datapoint_ids)[dp_rows] if dps.n else [], name="datapoint"),
    )
    attributes = _attribute_table(dp_attr_rows, dp_rows, dps, datapoint_ids, tasks)

    # ---- responses ---------------------------------------------------------------------
    resp_failed = _failed_status(resp.raw["status"], resp.n)
    resp_rows = (
        _last_valid(_id_codes(resp.raw["id"], resp.n), ~resp_failed) if resp.n else np.zeros(0, np.int64)
    )
    quality.phase4 = PhaseQuality(
        resp.n, resp.bad, resp.n - len(resp_rows), int(resp_failed[resp_rows].sum())
    )
    responses = pd.DataFrame(
        {
            "datapoint": _take(encode(resp.raw["datapoint_id"], datapoint_ids), resp_rows),
            "task": _cat(_take(encode(resp.raw["task_id"], tasks), resp_rows), tasks),
            "teacher": _cat(_take(encode(resp.raw["teacher_model_id"], models), resp_rows), models),
            "student": _cat(_take(encode(resp.raw["student_model_id"], models), resp_rows), models),
            "length": resp_lengths[resp_rows] if len(resp_lengths) else np.zeros(0),
            "failed": resp_failed[resp_rows],
        },
        index=pd.Index(_take(encode(resp.raw["id"], response_ids), resp_rows), name="response"),
    )
    if texts:
        all_text = pa.chunked_array(texts, pa.string()).combine_chunks().take(pa.array(resp_rows))
        responses["text"] = all_text.to_pylist()

    # ---- evaluation records ------------------------------------------------------------
    rec_response = encode(ev.raw["response_id"], response_ids)[kept]
    rec = {
        "response": rec_response,
        "datapoint": encode(ev.raw["datapoint_id"], datapoint_ids)[kept],
        "task": encode(ev.raw["task_id"], tasks)[kept],
        "teacher": encode(ev.raw["teacher_model_id"], models)[kept],
        "student": encode(ev.raw["student_model_id"], models)[kept],
        "judge": encode(ev.raw["judge_model_id"], models)[kept],
    }
    # fill what old records lack from their response
    lookup = pd.Series(np.arange(len(responses)), index=responses.index)
    pos = lookup.reindex(rec_response).to_numpy()
    has_resp = ~np.isnan(pos)
    pos_i = np.where(has_resp, pos, 0).astype(np.int64)
    for col, src in (("student", "student"), ("teacher", "teacher"), ("task", "task")):
        src_codes = (
            responses[src].cat.codes.to_numpy().astype(np.int32) if len(responses) else np.zeros(0, np.int32)
        )
        fill = (rec[col] < 0) & has_resp
        if fill.any():
            rec[col][fill] = src_codes[pos_i[fill]]
    if len(responses):
        dp_src = responses["datapoint"].to_numpy().astype(np.int32)
        fill = (rec["datapoint"] < 0) & has_resp
        rec["datapoint"][fill] = dp_src[pos_i[fill]]

    evaluator = _evaluators(ev, kept)
    rec_failed = failed[kept]
    error_kind = _error_kinds(ev.raw["error"], ev.n, kept)
    orphan = (~rec_failed) & ((rec["response"] < 0) | (rec["student"] < 0) | (rec["judge"] < 0))
    quality.n_orphaned = int(orphan.sum())
    quality.n_failed = int(rec_failed.sum())
    if len(responses):
        resp_failed_arr = responses["failed"].to_numpy()
        quality.n_failed_responses_scored = int((~rec_failed & has_resp & resp_failed_arr[pos_i]).sum())

    records = pd.DataFrame(
        {
            "response": rec["response"],
            "datapoint": rec["datapoint"],
            "task": _cat(rec["task"], tasks),
            "teacher": _cat(rec["teacher"], models),
            "student": _cat(rec["student"], models),
            "judge": _cat(rec["judge"], models),
            "evaluator": pd.Categorical(evaluator),
            "failed": rec_failed,
            "orphaned": orphan,
            "error_kind": pd.Categorical(error_kind),
        }
    )

    # ---- score units -------------------------------------------------------------------
    units = _units(scores, kept, records, rubrics, quality, ev.n)
    dp_codes = encode(dps.raw["id"], datapoint_ids) if dps.n else np.zeros(0, np.int32)
    kept_dp = set(dp_rows.tolist())
    gold_by_dp = {int(dp_codes[r]): v for r, v in dp_labels.items() if r in kept_dp}
    labels = _label_details(scores, kept, records, units, responses, gold_by_dp, attributes, target_attrs)
    _check_completeness(units, records, rubrics, quality)

    return RunData(
        path=root,
        experiment_id=str(meta.get("experiment_id") or root.name),
        meta=meta,
        config=config,
        rubrics=rubrics,
        target_attributes=target_attrs,
        label_attributes=label_attrs,
        models=models,
        response_ids=response_ids,
        datapoint_ids=datapoint_ids,
        records=records,
        units=units,
        responses=responses,
        datapoints=datapoints,
        attributes=attributes,
        labels=labels,
        quality=quality,
    )


def _take(codes: np.ndarray, rows: np.ndarray) -> np.ndarray:
    return codes[rows] if len(codes) else np.zeros(0, np.int32)


def _vocab(chunks: list[pa.Array]) -> pd.Index:
    sc = StringCodes()
    for c in chunks:
        sc.add(c)
    return pd.Index(sc.vocabulary(), dtype=object)


def _cat(codes: Any, vocab: pd.Index) -> pd.Categorical:
    return pd.Categorical.from_codes(np.asarray(codes, dtype=np.int32), categories=vocab, validate=False)


def _failed_status(chunks: list[pa.Array], n: int) -> np.ndarray:
    if n == 0:
        return np.zeros(0, bool)
    status = _strings(chunks, n)
    return pc.fill_null(pc.equal(pc.utf8_lower(status), "failed"), False).to_numpy(zero_copy_only=False)


def _has_label_records(ev: _PhaseTable) -> bool:
    return any(pc.any(pc.equal(chunk, "label")).as_py() for chunk in ev.raw["evaluator"])


def _evaluators(ev: _PhaseTable, kept: np.ndarray) -> np.ndarray:
    given = _strings(ev.raw["evaluator"], ev.n).take(pa.array(kept)).to_numpy(zero_copy_only=False)
    judge = _strings(ev.raw["judge_model_id"], ev.n).take(pa.array(kept)).to_numpy(zero_copy_only=False)
    out = np.empty(len(kept), dtype=object)
    for i, (g, j) in enumerate(zip(given, judge, strict=True)):
        if g:
            out[i] = g
        elif j in ("label", "gold"):
            out[i] = j
        elif isinstance(j, str) and j.startswith("metric:"):
            out[i] = "metric"
        else:
            out[i] = LLM_JUDGE
    return out


_KIND = re.compile(r"^\s*([A-Za-z_][\w.-]*)")


def _error_kinds(chunks: list[pa.Array], n: int, kept: np.ndarray) -> np.ndarray:
    raw = _strings(chunks, n).take(pa.array(kept))
    enc = pc.dictionary_encode(raw)
    kinds = []
    for text in enc.dictionary.to_pylist():
        kind = None
        try:
            obj = json.loads(text)
            if isinstance(obj, dict):
                kind = obj.get("kind") or obj.get("type")
        except (json.JSONDecodeError, TypeError):
            pass
        if kind is None and text:
            m = _KIND.match(text)
            kind = m.group(1) if m else "error"
        kinds.append(str(kind))
    lookup = np.array([*kinds, None], dtype=object)
    idx = pc.fill_null(enc.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    return lookup[idx]


def _attribute_table(
    rows: list[tuple[int, str, str]],
    dp_rows: np.ndarray,
    dps: _PhaseTable,
    datapoint_ids: pd.Index,
    tasks: pd.Index,
) -> pd.DataFrame:
    if not rows or not dps.n:
        return pd.DataFrame(
            {"datapoint": np.zeros(0, np.int32), "task": _cat([], tasks), "attribute": [], "value": []}
        )
    keep = np.zeros(dps.n, bool)
    keep[dp_rows] = True
    seq = np.array([r[0] for r in rows], np.int64)
    mask = keep[seq]
    dp_codes = encode(dps.raw["id"], datapoint_ids)
    task_codes = encode(dps.raw["task_id"], tasks)
    return pd.DataFrame(
        {
            "datapoint": dp_codes[seq[mask]],
            "task": _cat(task_codes[seq[mask]], tasks),
            "attribute": pd.Categorical([r[1] for r, m in zip(rows, mask, strict=True) if m]),
            "value": pd.Categorical([r[2] for r, m in zip(rows, mask, strict=True) if m]),
        }
    )


def _units(
    scores: _Scores,
    kept: np.ndarray,
    records: pd.DataFrame,
    rubrics: dict[str, dict[str, Any]],
    quality: DataQuality,
    n_raw: int,
) -> pd.DataFrame:
    seq, factor, value, level = scores.arrays()
    quality.n_invalid_scores = sum(scores.invalid.values())
    quality.invalid_values = dict(scores.invalid.most_common(20))
    row_of_seq = np.full(n_raw, -1, np.int64)
    row_of_seq[kept] = np.arange(len(kept))
    row = row_of_seq[seq]
    usable_rec = ~(records["failed"].to_numpy() | records["orphaned"].to_numpy())
    ok = row >= 0
    ok[ok] = usable_rec[row[ok]]
    row, factor, value, level = row[ok], factor[ok], value[ok], level[ok]
    factor_names = pd.Index(list(scores.factors), dtype=object)

    # LLM-judge scores of factors outside the task's rubric
    ev_codes = records["evaluator"].cat.codes.to_numpy()
    ev_cats = list(records["evaluator"].cat.categories)
    llm_code = ev_cats.index(LLM_JUDGE) if LLM_JUDGE in ev_cats else -2
    is_llm = ev_codes[row] == llm_code
    task_codes = records["task"].cat.codes.to_numpy()[row]
    tasks = records["task"].cat.categories
    allowed = np.ones(len(row), bool)
    unknown: Counter[str] = Counter()
    for t_code, t_name in enumerate(tasks):
        rubric = rubrics.get(str(t_name))
        if rubric is None:
            continue
        good = np.array([f in rubric for f in factor_names], bool)
        sel = is_llm & (task_codes == t_code)
        bad = sel & ~good[factor] if len(factor_names) else sel & False
        if bad.any():
            allowed &= ~bad
            for code, cnt in zip(*np.unique(factor[bad], return_counts=True), strict=True):
                unknown[str(factor_names[code])] += int(cnt)
    quality.n_unknown_factor_scores = sum(unknown.values())
    quality.unknown_factors = dict(unknown.most_common(20))
    row, factor, value, level = row[allowed], factor[allowed], value[allowed], level[allowed]

    # one score per (response, judge, factor): the last record wins
    resp = records["response"].to_numpy()[row].astype(np.int64)
    judge = records["judge"].cat.codes.to_numpy()[row].astype(np.int64)
    key = (resp * (len(records["judge"].cat.categories) + 1) + judge) * (len(factor_names) + 1) + factor
    dup = pd.Series(key).duplicated(keep="last").to_numpy()
    quality.n_duplicate_scores = int(dup.sum())
    if dup.any():
        row, factor, value, level = row[~dup], factor[~dup], value[~dup], level[~dup]

    units = pd.DataFrame(
        {
            "response": records["response"].to_numpy()[row],
            "datapoint": records["datapoint"].to_numpy()[row],
            "task": _take_cat(records["task"], row),
            "teacher": _take_cat(records["teacher"], row),
            "student": _take_cat(records["student"], row),
            "judge": _take_cat(records["judge"], row),
            "evaluator": _take_cat(records["evaluator"], row),
            "factor": pd.Categorical.from_codes(factor, categories=factor_names, validate=False),
            "value": value,
            "level": level,
        }
    )
    return units


def _take_cat(col: pd.Series, rows: np.ndarray) -> pd.Categorical:
    return pd.Categorical.from_codes(
        col.cat.codes.to_numpy()[rows], categories=col.cat.categories, validate=False
    )


def _as_labels(v: Any) -> tuple[str, ...]:
    if v is None:
        return ()
    if isinstance(v, list | tuple):
        return tuple(str(x) for x in v if x is not None)
    return (str(v),)


def _label_details(
    scores: _Scores,
    kept: np.ndarray,
    records: pd.DataFrame,
    units: pd.DataFrame,
    responses: pd.DataFrame,
    gold_by_dp: dict[int, Any],
    attributes: pd.DataFrame,
    target_attrs: dict[str, dict[str, list[str]]],
) -> pd.DataFrame:
    """Gold and predicted labels per (response, attribute) of label-evaluator records.

    Taken from the record's ``gold`` / ``predicted`` mappings when it has them; otherwise
    recomputed from the datapoint's gold (its ``labels`` / ``label``, else the attribute's
    sampled value) and the student's answer, with :func:`coeval_analysis.labels.extract_labels`
    over the attribute's values.
    """
    from coeval_analysis.labels import extract_labels

    cols: dict[str, list[Any]] = {
        k: [] for k in ("response", "student", "task", "attribute", "gold", "predicted")
    }
    lab = units[units["evaluator"] == "label"]
    if lab.empty:
        return pd.DataFrame(cols)
    row_of_seq = {int(s): i for i, s in enumerate(kept)}
    detail: dict[int, tuple[Any, Any]] = {}
    for s, g, p in scores.label_rows:
        r = row_of_seq.get(int(s))
        if r is not None:
            detail[int(records["response"].iat[r]) * 1_000_003 + int(records["judge"].cat.codes[r])] = (g, p)
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
        g_map, p_map = detail.get(int(resp) * 1_000_003 + int(jc), (None, None))
        gold = _as_labels(g_map.get(attr)) if isinstance(g_map, dict) else ()
        if not gold:
            dp_gold = gold_by_dp.get(int(dp))
            gold = _as_labels(dp_gold.get(attr)) if isinstance(dp_gold, dict) else _as_labels(dp_gold)
        if not gold and (int(dp), str(attr)) in sampled:
            gold = (sampled[(int(dp), str(attr))],)
        if isinstance(p_map, dict) and attr in p_map:
            pred = _as_labels(p_map.get(attr))
        else:
            text = texts.get(int(resp)) if texts is not None else None
            allowed = sorted(set(target_attrs.get(str(task), {}).get(str(attr), [])) | set(gold))
            pred = tuple(extract_labels(text or "", allowed, multi=len(gold) > 1))
        cols["response"].append(int(resp))
        cols["student"].append(str(student))
        cols["task"].append(str(task))
        cols["attribute"].append(str(attr))
        cols["gold"].append(tuple(gold))
        cols["predicted"].append(tuple(pred))
    return pd.DataFrame(cols)


def _check_completeness(
    units: pd.DataFrame, records: pd.DataFrame, rubrics: dict[str, dict[str, Any]], quality: DataQuality
) -> None:
    """Count (response, judge) pairs of LLM judges lacking some LLM factor of the rubric."""
    recs = records[(records["evaluator"] == LLM_JUDGE) & ~records["failed"] & ~records["orphaned"]]
    if recs.empty:
        return
    llm = units[units["evaluator"] == LLM_JUDGE]
    missing: Counter[str] = Counter()
    n_incomplete = 0
    n_judges = len(records["judge"].cat.categories) + 1
    for task, task_recs in recs.groupby("task", observed=True):
        rubric = rubrics.get(str(task))
        if not rubric:
            continue
        expected = llm_factors(rubric)
        if not expected:
            continue
        pair_keys = (
            task_recs["response"].to_numpy().astype(np.int64) * n_judges
            + task_recs["judge"].cat.codes.to_numpy()
        )
        pairs = np.unique(pair_keys)
        tu = llm[(llm["task"] == task) & llm["factor"].isin(expected)]
        unit_keys = tu["response"].to_numpy().astype(np.int64) * n_judges + tu["judge"].cat.codes.to_numpy()
        per_pair = pd.Series(unit_keys).value_counts()
        counts = per_pair.reindex(pairs, fill_value=0).to_numpy()
        n_incomplete += int((counts < len(expected)).sum())
        per_factor = tu["factor"].value_counts()
        for f in expected:
            gap = len(pairs) - int(per_factor.get(f, 0))
            if gap > 0:
                missing[f] += gap
    quality.n_incomplete = n_incomplete
    quality.missing_factors = dict(missing.most_common())
