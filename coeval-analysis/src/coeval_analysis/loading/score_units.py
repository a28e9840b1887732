"""Score units (one row per usable score of a kept record), label details, and the
completeness of LLM-judge records against their task's rubric."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from coeval_analysis.labels.exact_match import normalise_label
from coeval_analysis.loading.columns import take_categorical
from coeval_analysis.loading.run_data import LLM_JUDGE, DataQuality
from coeval_analysis.loading.vocabulary import Vocabulary

__all__ = ["check_completeness", "label_details", "llm_factors", "score_units"]


def llm_factors(rubric: dict[str, Any]) -> list[str]:
    """Rubric factors the LLM judge scores: those without a ``metric``, without an
    ``evaluator`` other than ``llm_judge`` (a plugin evaluator such as ``pairwise``), and not
    a weight-only entry (``pass@1: {weight: 2}`` weights a factor another evaluator scores)."""
    return [f for f, spec in rubric.items()
            if not (isinstance(spec, dict) and (spec.get("metric") or spec.get("evaluator") not in (None, LLM_JUDGE)
                                                or set(spec) == {"weight"}))]



def score_units(
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
            "task": take_categorical(records["task"], row),
            "teacher": take_categorical(records["teacher"], row),
            "student": take_categorical(records["student"], row),
            "judge": take_categorical(records["judge"], row),
            "evaluator": take_categorical(records["evaluator"], row),
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


def label_details(
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
    normalised (:func:`coeval_analysis.labels.exact_match.normalise_label`).
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


def check_completeness(
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
