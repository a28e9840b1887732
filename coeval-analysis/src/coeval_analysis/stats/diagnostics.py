"""Teacher discrimination, self-preference and verbosity diagnostics.

All work on the judge-weighted consensus (see :mod:`coeval_analysis.stats.diagnostic_ranking`), so a
random judge does not blur them, except the self-preference of a judge, which compares
that judge with the others on the same responses.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from coeval_analysis.stats.correlation import kendall_tau_b, spearman
from coeval_analysis.stats.diagnostic_ranking import DiagnosticRanking
from coeval_analysis.stats.scores import ScoreModel, dense_mean

__all__ = ["model_family", "self_preference", "teacher_discrimination", "verbosity"]


def _f(x: float | np.floating[Any] | None) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def teacher_discrimination(model: ScoreModel, robust: DiagnosticRanking) -> dict[str, dict[str, Any]]:
    """Per teacher: how well its datapoints separate the students.

    ``discrimination``: mean over its datapoints (answered by >= 2 students) of the standard
    deviation of the students' scores on it; ``separation``: standard deviation of the
    students' mean scores over its datapoints; ``ranking_agreement``: Kendall's tau between
    the student ranking its datapoints give and the one all other teachers' datapoints give
    (does it rank students the way everyone else does?); ``mean_score`` (how easy its
    datapoints are) and ``n_datapoints``.
    """
    c = robust.consensus
    out: dict[str, dict[str, Any]] = {}
    for t_code in np.unique(model.item_teacher):
        if t_code < 0:
            continue
        name = model.teachers[t_code]
        mine = model.item_teacher == t_code
        sub = c[mine]
        per_item_sd = _row_sd(sub)
        per_item_sd = per_item_sd[~np.isnan(per_item_sd)]
        means = _col_mean(sub)
        entry: dict[str, Any] = {
            "discrimination": _f(per_item_sd.mean()) if len(per_item_sd) else None,
            "separation": _f(np.nanstd(means, ddof=1)) if np.sum(~np.isnan(means)) >= 2 else None,
            "mean_score": _f(np.nanmean(sub)) if np.isfinite(sub).any() else None,
            "n_datapoints": int(mine.sum()),
            "ranking_agreement": None,
        }
        others = c[~mine]
        if len(others) and model.n_students >= 3:
            other_means = _col_mean(others)
            ok = ~np.isnan(means) & ~np.isnan(other_means)
            if ok.sum() >= 3:
                tau = kendall_tau_b(means[ok], other_means[ok])
                entry["ranking_agreement"] = _f(tau)
        out[name] = entry
    return out


def _row_sd(mat: np.ndarray) -> np.ndarray:
    """Sample standard deviation of each row over its non-NaN cells (NaN below 2 cells)."""
    has = ~np.isnan(mat)
    n = has.sum(1)
    z = np.where(has, mat, 0.0)
    mean = z.sum(1) / np.maximum(n, 1)
    ss = (np.where(has, mat - mean[:, None], 0.0) ** 2).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n >= 2, np.sqrt(ss / np.maximum(n - 1, 1)), np.nan)


def _col_mean(mat: np.ndarray) -> np.ndarray:
    has = ~np.isnan(mat)
    n = has.sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, np.where(has, mat, 0.0).sum(0) / np.maximum(n, 1), np.nan)


_FAMILY = re.compile(r"[a-z]+")


def model_family(name: str) -> str:
    """Vendor family from a model name: the leading letters of its last path segment
    ("gpt-4o-mini" -> "gpt", "Qwen/Qwen2.5-7B" -> "qwen", "claude-3-haiku" -> "claude")."""
    last = name.rsplit("/", 1)[-1].rsplit(":", 1)[-1].lower()
    m = _FAMILY.match(last)
    return m.group(0) if m else last


def _diff_in_means(a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    if len(a) == 0 or len(b) == 0:
        return {"bias": None, "se": None, "n_self": len(a), "n_other": len(b)}
    se = np.sqrt(
        (a.var(ddof=1) / len(a) if len(a) > 1 else 0.0) + (b.var(ddof=1) / len(b) if len(b) > 1 else 0.0)
    )
    return {"bias": float(a.mean() - b.mean()), "se": _f(se), "n_self": len(a), "n_other": len(b)}


def self_preference(
    model: ScoreModel, robust: DiagnosticRanking, families: dict[str, str] | None = None
) -> dict[str, Any]:
    """Do models favour themselves?

    Each (response, judge) score is compared with the mean score the *unrelated* judges
    (other vendor families than the student's, see :func:`model_family`) gave the same
    response. ``judge_is_student``: for a judge that is also a student, its mean excess on
    its own answers minus its mean excess on answers of models unrelated to it (its
    general leniency): a difference in differences on the same responses.
    ``same_family``: the same for answers of other models of the judge's family.
    ``teacher_is_student``: for a student that is also a teacher, its lead over the other
    students on its own datapoints minus its lead elsewhere (judge-weighted scores).
    Positive = self-preference; ``se`` is a standard error ignoring clustering. Without
    unrelated judges there is no reference and no entry: ``not_measured`` then gives, per
    check, each such model with the number of its scores (or datapoints) left without a
    reference, so a judge of its own answers never shows as "0 own". ``families``: model -> family
    (the analysis passes config's ``models[].family`` or its inference); missing names fall
    back to :func:`model_family`.
    """
    fam = families or {}

    def family(name: str) -> str:
        return fam.get(name) or model_family(name)

    pr, pj, pm = model.per_judge_response()
    out: dict[str, Any] = {"judge_is_student": {}, "same_family": {}, "teacher_is_student": {}}
    unmeasured: dict[str, dict[str, int]] = {"judge_is_student": {}, "same_family": {}, "teacher_is_student": {}}
    if len(model.judges) >= 2 and len(pr):
        student = model.resp_student[pr]
        fam_student = np.array([family(s) for s in model.students] + [""], dtype=object)[student]
        fam_judge = np.array([family(j) for j in model.judges], dtype=object)[pj]
        unrelated = (fam_judge != fam_student) & (student >= 0)
        s_u = np.bincount(pr, weights=np.where(unrelated, pm, 0.0), minlength=model.n_responses)
        c_u = np.bincount(pr, weights=unrelated.astype(float), minlength=model.n_responses)
        n_ref = np.where(unrelated, c_u[pr] - 1, c_u[pr])
        with np.errstate(invalid="ignore", divide="ignore"):
            ref = np.where(n_ref > 0, (s_u[pr] - np.where(unrelated, pm, 0.0)) / np.maximum(n_ref, 1), np.nan)
        excess = pm - ref
        student_names = np.array([*model.students, ""], dtype=object)[student]
        for j, judge in enumerate(model.judges):
            mine = pj == j
            baseline = excess[mine & unrelated]
            own = mine & (student_names == judge)
            if own.any():
                _compare(out, unmeasured, "judge_is_student", judge, excess[own], baseline)
            kin = mine & ~unrelated & (student_names != judge) & (student >= 0)
            if kin.any():
                _compare(out, unmeasured, "same_family", judge, excess[kin], baseline, family=family(judge))
    c = robust.consensus
    if model.n_students >= 2 and len(c):
        n_s = (~np.isnan(c)).sum(1)
        row_sum = np.nansum(c, 1)
        for s, student in enumerate(model.students):
            if student not in model.teachers:
                continue
            t_code = model.teachers.index(student)
            has = ~np.isnan(c[:, s]) & (n_s >= 2)
            lead = np.where(
                has, c[:, s] - (row_sum - np.nan_to_num(c[:, s])) / np.maximum(n_s - 1, 1), np.nan
            )
            own = model.item_teacher == t_code
            if own.any():
                _compare(out, unmeasured, "teacher_is_student", student, lead[own & has], lead[~own & has])
    out["not_measured"] = unmeasured
    return out


def _compare(
    out: dict[str, Any],
    unmeasured: dict[str, dict[str, int]],
    check: str,
    name: str,
    own: np.ndarray,
    others: np.ndarray,
    **extra: Any,
) -> None:
    """One self-preference entry, or, when either side has no value with a reference, the
    count of ``own`` under ``not_measured`` instead (nothing to compare is no entry)."""
    result = _diff_in_means(own, others)
    if result["bias"] is None:
        unmeasured[check][name] = len(own)
        return
    out[check][name] = {**extra, **result}


def verbosity(model: ScoreModel, robust: DiagnosticRanking) -> dict[str, Any]:
    """Do longer answers score higher? Spearman's rho between answer length (characters) and
    score, per judge and for the weighted consensus, and ``within_item``: the same after
    removing each datapoint's mean length and score (so that long prompts, which ask for
    long answers, do not count)."""
    lengths = np.full(model.n_responses, np.nan)
    resp = model.data.responses
    if len(resp) and "length" in resp.columns:
        lengths[resp.index.to_numpy()] = resp["length"].to_numpy()
    out: dict[str, Any] = {"ensemble": None, "judges": {}}

    def corr(r: np.ndarray, score: np.ndarray) -> dict[str, Any] | None:
        ln = lengths[r]
        ok = ~np.isnan(ln) & ~np.isnan(score)
        if ok.sum() < 3 or np.std(ln[ok]) == 0 or np.std(score[ok]) == 0:
            return None
        rho = spearman(ln[ok], score[ok])
        item = model.resp_item[r][ok]
        good = item >= 0
        within = None
        if good.sum() >= 3:
            mean_len, _ = dense_mean(item[good], model.n_items, ln[ok][good])
            mean_sc, _ = dense_mean(item[good], model.n_items, score[ok][good])
            dl = ln[ok][good] - mean_len[item[good]]
            ds = score[ok][good] - mean_sc[item[good]]
            if np.std(dl) > 0 and np.std(ds) > 0:
                within = float(np.corrcoef(dl, ds)[0, 1])
        return {"spearman": _f(rho), "within_item": within, "n": int(ok.sum())}

    r_all = model.scored_responses()
    out["ensemble"] = corr(r_all, robust.resp_consensus[r_all])
    pr, pj, pm = model.per_judge_response()
    for j, judge in enumerate(model.judges):
        sel = pj == j
        out["judges"][judge] = corr(pr[sel], pm[sel])
    return out
