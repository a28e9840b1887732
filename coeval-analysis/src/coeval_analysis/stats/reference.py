"""Scores against references: benchmark gold, metric factors and label exact-match.

Gold records (``evaluator: gold``, e.g. ``{"gold": 1.0}``: the benchmark's own verdict on
an answer) are never mixed into the judge score; they are what the judges are checked
against. Metric (``metric:bleu`` ...) and label evaluators score rubric factors and are part
of the student score; here they are reported on their own as well.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from coeval_analysis.labels.exact_match import normalise_label, precision_recall_f1
from coeval_analysis.stats.bootstrap import Bootstrap
from coeval_analysis.stats.correlation import pearson, spearman
from coeval_analysis.stats.diagnostic_ranking import DiagnosticRanking
from coeval_analysis.stats.numbers import finite_or_none
from coeval_analysis.stats.scores import GOLD, ScoreModel, dense_mean

__all__ = ["evaluator_scores", "gold_report", "label_report"]


def _corr(x: np.ndarray, y: np.ndarray) -> dict[str, Any] | None:
    ok = ~np.isnan(x) & ~np.isnan(y)
    if ok.sum() < 3 or np.std(x[ok]) == 0 or np.std(y[ok]) == 0:
        return {"pearson": None, "spearman": None, "n": int(ok.sum())}
    return {
        "pearson": pearson(x[ok], y[ok]),
        "spearman": float(spearman(x[ok], y[ok])),
        "n": int(ok.sum()),
    }


def gold_report(
    model: ScoreModel, robust: DiagnosticRanking, boot: Bootstrap, level: float = 0.95
) -> dict[str, Any] | None:
    """Per-student gold score (with interval) beside the judge score, and how well the
    judge ensemble (and each judge) tracks gold, per response and per student ranking."""
    units = model.data.units
    gold = units[units["evaluator"].astype(object) == GOLD]
    if gold.empty:
        return None
    g_resp, _g_n = dense_mean(
        gold["response"].to_numpy().astype(np.int64),
        model.n_responses,
        gold["value"].to_numpy().astype(np.float64),
    )
    mat = model.item_student_matrix(g_resp)
    has = ~np.isnan(mat)
    num = np.where(has, mat, 0.0)
    den = has.astype(np.float64)
    tot = den.sum(0)
    score = np.where(tot > 0, num.sum(0) / np.maximum(tot, 1), np.nan)
    lo, hi = boot.ratio_ci(num, den, level)
    students = {
        s: {
            "gold_score": finite_or_none(score[i]),
            "gold_ci": [finite_or_none(lo[i]), finite_or_none(hi[i])],
            "n": int(tot[i]),
            "diagnostic_score": finite_or_none(robust.score[i]),
            "robust_score": finite_or_none(robust.score[i]),  # schema 2's name, for one release
        }
        for i, s in enumerate(model.students)
        if tot[i] > 0
    }
    out: dict[str, Any] = {
        "students": students,
        "ensemble_vs_gold": _corr(robust.resp_consensus, g_resp),
        "plain_vs_gold": _corr(model.resp_score, g_resp),
        "judges_vs_gold": {},
        "ranking_vs_gold": None,
    }
    pr, pj, pm = model.per_judge_response()
    for j, judge in enumerate(model.judges):
        sel = pj == j
        out["judges_vs_gold"][judge] = _corr(pm[sel], g_resp[pr[sel]])
    ok = ~np.isnan(score) & ~np.isnan(robust.score)
    if ok.sum() >= 3:
        out["ranking_vs_gold"] = {
            "spearman": float(spearman(score[ok], robust.score[ok])),
            "n_students": int(ok.sum()),
        }
    return out


def evaluator_scores(model: ScoreModel) -> pd.DataFrame:
    """Mean score per (evaluator, factor, student) of the non-LLM evaluators."""
    s_idx = model.resp_student[model.x_resp] if len(model.x_resp) else np.zeros(0, np.int64)
    ok = s_idx >= 0
    if not ok.any():
        return pd.DataFrame(columns=["evaluator", "factor", "student", "score", "n"])
    df = pd.DataFrame(
        {
            "evaluator": np.asarray(model.scorers, dtype=object)[model.x_scorer[ok]],
            "factor": np.asarray(model.factors, dtype=object)[model.x_factor[ok]],
            "student": np.asarray(model.students, dtype=object)[s_idx[ok]],
            "value": model.x_value[ok],
        }
    )
    return (
        df.groupby(["evaluator", "factor", "student"])
        .agg(score=("value", "mean"), n=("value", "size"))
        .reset_index()
    )


def label_report(labels: pd.DataFrame, grid: dict[str, dict[str, list[str]]] | None = None) -> dict[str, Any]:
    """Per (task, attribute): accuracy and per-label precision / recall / F1 over all
    students, and accuracy and macro-F1 per student. The labels are the attribute's values
    in the grid plus every gold value; an answer that is none of them is wrong (a false
    negative of the gold label) without becoming a label of its own."""
    out: dict[str, Any] = {}
    if labels is None or labels.empty:
        return out
    for (task, attr), g in labels.groupby(["task", "attribute"], sort=True):
        names = {normalise_label(v) for v in (grid or {}).get(str(task), {}).get(str(attr), [])}
        names |= {normalise_label(x) for gold in g["gold"] for x in gold}
        rep = precision_recall_f1(list(g["gold"]), list(g["predicted"]), labels=sorted(names))
        per_student = {}
        for student, gs in g.groupby("student", sort=True):
            r = precision_recall_f1(
                list(gs["gold"]), list(gs["predicted"]), labels=list(rep.per_label["label"])
            )
            per_student[str(student)] = {"accuracy": r.accuracy, "macro_f1": r.macro["f1"], "n": r.n_items}
        out[f"{task}/{attr}"] = {
            "task": str(task),
            "attribute": str(attr),
            **rep.as_dict(),
            "students": per_student,
        }
    return out


