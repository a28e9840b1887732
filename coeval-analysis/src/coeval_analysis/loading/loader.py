"""Load a run folder (current or legacy format) into :class:`~coeval_analysis.loading.run_data.RunData`.

Rules, each applied deliberately and counted in :class:`~coeval_analysis.loading.run_data.DataQuality`:

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

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from coeval.record_schema import (
    DATAPOINT_ID,
    ERROR,
    ERROR_KIND,
    EVALUATOR,
    ID,
    JUDGE_MODEL_ID,
    LABEL,
    LABELS,
    RATIONALE,
    RESPONSE,
    RESPONSE_ID,
    SAMPLED_TARGET_ATTRIBUTES,
    SCORES,
    STATUS,
    STUDENT_MODEL_ID,
    TASK_ID,
    TEACHER_MODEL_ID,
)
from coeval.storage.listing import storage_folder_hint
from coeval.storage.run_folder import RunFolder

from coeval_analysis.errors import AnalysisInputError
from coeval_analysis.loading.columns import ID_HASH, categorical, parse_scores, text_chunks
from coeval_analysis.loading.jsonl import JSON_TEXT, MAP, TEXT, map_entries, read_records
from coeval_analysis.loading.left_out import (
    leave_out_above_total,
    leave_out_removed,
    without_models,
)
from coeval_analysis.loading.record_tables import (
    count_invalid_scores,
    datapoint_tables,
    error_kinds,
    evaluators,
    kept_evaluations,
    record_fields,
    response_table,
)
from coeval_analysis.loading.reply_flags import REPLY_FLAG_COLUMNS, replies_frame
from coeval_analysis.loading.run_data import DataQuality, RunData
from coeval_analysis.loading.run_files import (
    PHASE3,
    PHASE4,
    PHASE5,
    jsonl_files,
    label_attributes,
    read_config,
    read_json,
    target_attributes,
    task_rubrics,
)
from coeval_analysis.loading.score_units import check_completeness, label_details, score_units
from coeval_analysis.loading.vocabulary import Vocabulary, encode
from coeval_analysis.warnings.stale import STALE_COLUMNS, stale_counts

__all__ = ["evaluation_files", "load_run"]

_EVAL_COLUMNS = {
    ID: TEXT, RESPONSE_ID: TEXT, DATAPOINT_ID: TEXT, TASK_ID: TEXT, TEACHER_MODEL_ID: TEXT,
    STUDENT_MODEL_ID: TEXT, JUDGE_MODEL_ID: TEXT, EVALUATOR: TEXT, STATUS: TEXT, ERROR: TEXT,
    ERROR_KIND: TEXT, SCORES: MAP, "gold": JSON_TEXT, "predicted": JSON_TEXT,
}  # fmt: skip
_RESP_COLUMNS = {
    ID: TEXT, DATAPOINT_ID: TEXT, TASK_ID: TEXT, TEACHER_MODEL_ID: TEXT, STUDENT_MODEL_ID: TEXT,
    STATUS: TEXT,
}  # fmt: skip
_DP_COLUMNS = {
    ID: TEXT, TASK_ID: TEXT, TEACHER_MODEL_ID: TEXT, STATUS: TEXT, SAMPLED_TARGET_ATTRIBUTES: MAP,
    LABEL: JSON_TEXT, LABELS: JSON_TEXT,
}  # fmt: skip



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



def _read_evaluations(root: Path, files: list[Path]) -> tuple[pa.Table, int, Counter[str]]:
    """Phase 5's records (with the number of lines that were not records), and the run's
    stale records counted from them (:func:`~coeval_analysis.warnings.stale.stale_counts`), so that
    the judgments are read once."""
    ev, bad = read_records(
        files, {**_EVAL_COLUMNS, RATIONALE: JSON_TEXT, **dict.fromkeys(STALE_COLUMNS, TEXT)},
        {**ID_HASH, **REPLY_FLAG_COLUMNS}, hidden=("rationale",),
    )
    stale = stale_counts(root, ev)
    return ev.drop_columns(list(STALE_COLUMNS)), bad, stale


def load_run(path: str | Path, *, keep_response_text: bool = False) -> RunData:
    """Load a run folder. Raises :class:`AnalysisInputError` when it is not one."""
    root = Path(path)
    eval_files = evaluation_files(root)
    meta_path = RunFolder(root).meta_path
    meta = read_json(meta_path) or {}
    if not isinstance(meta, dict):
        raise AnalysisInputError(f"{meta_path}: must be a JSON object")
    config = read_config(root)
    rubrics = task_rubrics(root, config)
    target_attrs = target_attributes(root, config)
    label_attrs = label_attributes(config)
    quality = DataQuality()

    # ---- read the three phases -------------------------------------------------------
    ev, ev_bad, stale = _read_evaluations(root, eval_files)
    quality.n_records, quality.n_bad_lines = ev.num_rows, ev_bad
    ev, left_out = leave_out_removed(ev, meta, config, quality)
    if ev.num_rows == 0:
        raise AnalysisInputError(f"{root / PHASE5}: the evaluation files hold no records")
    has_labels = bool(pc.any(pc.equal(ev.column("evaluator"), "label")).as_py())
    want_text = keep_response_text or has_labels
    resp, resp_bad = read_records(
        jsonl_files(root, PHASE4),
        {**_RESP_COLUMNS, RESPONSE: TEXT},
        {"length": "length(response)", **ID_HASH},
        hidden=() if want_text else ("response",),
    )
    dps, dp_bad = read_records(jsonl_files(root, PHASE3), _DP_COLUMNS, ID_HASH)
    resp, dps = without_models(resp, left_out)[0], without_models(dps, left_out)[0]
    ev, resp, dps = leave_out_above_total((ev, resp, dps), meta, config, target_attrs, quality)

    # ---- vocabularies shared by all tables ---------------------------------------------
    models = Vocabulary(
        text_chunks(ev, JUDGE_MODEL_ID) + text_chunks(ev, STUDENT_MODEL_ID) + text_chunks(ev, TEACHER_MODEL_ID)
        + text_chunks(resp, STUDENT_MODEL_ID) + text_chunks(resp, TEACHER_MODEL_ID) + text_chunks(dps, TEACHER_MODEL_ID)
    )  # fmt: skip
    tasks = Vocabulary(text_chunks(ev, TASK_ID) + text_chunks(resp, TASK_ID) + text_chunks(dps, TASK_ID))
    response_ids = Vocabulary(text_chunks(resp, "id") + text_chunks(ev, RESPONSE_ID))
    datapoint_ids = Vocabulary(text_chunks(dps, "id") + text_chunks(resp, DATAPOINT_ID) + text_chunks(ev, DATAPOINT_ID))

    # ---- datapoints --------------------------------------------------------------------
    datapoints, attributes, gold_by_dp = datapoint_tables(dps, dp_bad, quality, datapoint_ids, tasks, models)

    # ---- responses ---------------------------------------------------------------------
    responses = response_table(resp, resp_bad, want_text, quality, (datapoint_ids, tasks, models, response_ids))

    # ---- evaluation records: failures and duplicates -----------------------------------
    n = ev.num_rows
    s_rows, s_keys, s_values = map_entries(ev.column("scores"))
    s_value, s_level = parse_scores(s_values)
    bad = np.isnan(s_value)
    failed, kept = kept_evaluations(ev, s_rows, bad, quality)

    # Who answered what comes from the response record (phase 4) when the evaluation's
    # response resolves; the evaluation's own fields are used otherwise (old records lack
    # student_model_id). Only those few records need their strings encoded.
    kept_arr = pa.array(kept)

    def kept_codes(field: str, vocab: Vocabulary, rows: np.ndarray | None = None) -> np.ndarray:
        col = ev.column(field).take(kept_arr if rows is None else pa.array(kept[rows]))
        return encode(col.chunks, vocab)

    vocabs = (datapoint_ids, tasks, models, response_ids)
    rec, pos_i, has_resp = record_fields(kept_codes, responses, len(kept), vocabs)

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
            "task": categorical(rec["task"], tasks),
            "teacher": categorical(rec["teacher"], models),
            "student": categorical(rec["student"], models),
            "judge": categorical(rec["judge"], models),
            "evaluator": pd.Categorical(evaluators(ev, kept)),
            "failed": rec_failed,
            "orphaned": orphan,
            "error_kind": pd.Categorical(error_kinds(ev, kept)),
        }
    )

    # ---- score units -------------------------------------------------------------------
    count_invalid_scores(s_values, bad, quality)
    factor_enc = pc.dictionary_encode(s_keys)
    factor_names = Vocabulary([factor_enc.dictionary])
    factor = pc.fill_null(factor_enc.indices, -1).to_numpy().astype(np.int64)
    units = score_units(s_rows[~bad], factor[~bad], s_value[~bad], s_level[~bad], kept, n, records, factor_names,
                   rubrics, quality)  # fmt: skip
    labels = label_details(ev, kept, records, units, responses, gold_by_dp, attributes)
    check_completeness(units, records, rubrics, label_attrs, quality)

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
        stale=stale,
    )
