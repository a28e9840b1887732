"""Ground truth as a judge: human labels and gold as one reference table, and how each
model judge agrees with it.

The reference table has one row per (datapoint, student, factor, source) with a score in
[0, 1]: ``source`` is ``human`` (the mean of the labellers' levels, Low / Medium / High
scored 0 / 0.5 / 1 as a judge's are; stale labels left out) or ``gold`` (benchmark gold
verdicts, ``evaluator: gold`` records, and label-attribute exact-match scores of answers
that have no gold verdict). It is what
the headline's measurement model takes as a judge of known scale 1, location 0 and no
family. Beside it, this module reports what a user checks first: each judge's agreement
with the people and with gold, the students ranked by the human labels alone, and how
many labels the run has against how many more would settle its undetermined comparisons.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from coeval_analysis.labels.human_labels import LEVELS, HumanLabel
from coeval_analysis.loading.run_data import RunData
from coeval_analysis.loading.score_units import llm_factors
from coeval_analysis.stats.agreement import cohen_kappa, confusion
from coeval_analysis.stats.bootstrap import Bootstrap, percentile_interval
from coeval_analysis.stats.comparisons import compare_students, rank_label
from coeval_analysis.stats.correlation import pearson
from coeval_analysis.stats.numbers import finite_or_none
from coeval_analysis.stats.scores import GOLD, ScoreModel

__all__ = [
    "MIN_HUMAN_ANSWERS",
    "REFERENCE_COLUMNS",
    "agreement_with",
    "human_ranking",
    "labels_needed",
    "reference_summary",
    "reference_table",
]

REFERENCE_COLUMNS = ("datapoint_id", "student", "factor", "score", "source")
#: a student enters the human-only ranking with at least this many labelled answers
MIN_HUMAN_ANSWERS = 5
#: evaluators whose scores are ground truth (gold verdicts, label exact-match)
_GOLD_EVALUATORS = (GOLD, "label")
#: the smallest difference the label estimate plans for (closer students stay "about equal")
_SMALLEST_GAP = 0.02
_N_LEVELS = len(LEVELS)


def _human_rows(labels: Sequence[HumanLabel]) -> pd.DataFrame:
    fresh = [lab for lab in labels if not lab.stale]
    if not fresh:
        return pd.DataFrame({c: pd.Series(dtype=float if c == "score" else object) for c in REFERENCE_COLUMNS})
    df = pd.DataFrame(
        {"datapoint_id": [lab.datapoint_id for lab in fresh], "student": [lab.student for lab in fresh],
         "factor": [lab.factor for lab in fresh], "score": [lab.score for lab in fresh]}
    )  # fmt: skip
    df = df.groupby(["datapoint_id", "student", "factor"], sort=True, as_index=False)["score"].mean()
    df["source"] = "human"
    return df[list(REFERENCE_COLUMNS)]


def _gold_rows(data: RunData) -> pd.DataFrame:
    units = data.units
    gold = units[units["evaluator"].astype(object).isin(_GOLD_EVALUATORS).to_numpy()]
    if gold.empty:
        return pd.DataFrame({c: pd.Series(dtype=float if c == "score" else object) for c in REFERENCE_COLUMNS})
    df = pd.DataFrame(
        {
            "datapoint_id": np.asarray(data.datapoint_ids, dtype=object)[gold["datapoint"].to_numpy()],
            "student": gold["student"].astype(object).to_numpy(),
            "factor": gold["factor"].astype(object).to_numpy(),
            "score": gold["value"].to_numpy().astype(np.float64),
        }
    )
    # a benchmark's gold verdict judges the answer itself; a label attribute's exact match of
    # the whole answer ("The answer is B." is not "B") stands in only where there is none
    is_label = (gold["evaluator"].astype(object) == "label").to_numpy()
    judged = pd.MultiIndex.from_frame(df.loc[~is_label, ["datapoint_id", "student"]])
    df = df[~is_label | ~pd.MultiIndex.from_frame(df[["datapoint_id", "student"]]).isin(judged)]
    df = df.groupby(["datapoint_id", "student", "factor"], sort=True, as_index=False)["score"].mean()
    df["source"] = "gold"
    return df[list(REFERENCE_COLUMNS)]


def reference_table(data: RunData, labels: Sequence[HumanLabel] = ()) -> pd.DataFrame:
    """(datapoint_id, student, factor, score, source) of every fresh human label (mean over
    labellers) and every gold score of the run: the reference judge of the headline."""
    parts = [p for p in (_human_rows(labels), _gold_rows(data)) if len(p)]
    if not parts:
        return _human_rows(())
    return pd.concat(parts, ignore_index=True)


# ------------------------------------------------------------------------------------------
# agreement of each judge with a reference


def _level_of(score: np.ndarray) -> np.ndarray:
    """Nearest of the three levels (0, 1, 2) of scores in [0, 1]."""
    levels: np.ndarray = np.clip(np.rint(score * (_N_LEVELS - 1)), 0, _N_LEVELS - 1).astype(np.int64)
    return levels


def agreement_with(judge: np.ndarray, reference: np.ndarray) -> dict[str, Any]:
    """Agreement of a judge's scores with the reference's on the same units (both in
    [0, 1]): linear-weighted kappa on the three levels (each score rounded to the nearest
    level), Pearson's r, bias (mean judge minus reference) and the number of shared units."""
    n = len(judge)
    out: dict[str, Any] = {"kappa_linear": None, "pearson": None, "bias": None, "n": int(n)}
    if n == 0:
        return out
    out["bias"] = float(np.mean(judge - reference))
    kappa = cohen_kappa(confusion(_level_of(judge), _level_of(reference), _N_LEVELS), "linear")
    out["kappa_linear"] = kappa if math.isfinite(kappa) else None
    if n >= 3 and np.std(judge) > 0 and np.std(reference) > 0:
        out["pearson"] = pearson(judge, reference)
    return out


def _codes(index: pd.Index, values: Sequence[str]) -> np.ndarray:
    return np.asarray(index.get_indexer(pd.Index(list(values), dtype=object)), np.int64)


def _response_codes(data: RunData, model: ScoreModel, ref: pd.DataFrame) -> np.ndarray:
    """Response code of each reference row's (datapoint, student); -1 when the run has none."""
    if ref.empty:
        return np.zeros(0, np.int64)
    r = model.scored_responses()
    dp = model.items[model.resp_item[r]]
    st = model.resp_student[r]
    key = {(int(d), int(s)): int(c) for d, s, c in zip(dp, st, r, strict=True)}
    dps = _codes(data.datapoint_ids, ref["datapoint_id"].astype(str).tolist())
    stu = {name: i for i, name in enumerate(model.students)}
    return np.array([key.get((int(d), stu.get(s, -1)), -1) for d, s in zip(dps, ref["student"], strict=True)],
                    np.int64)  # fmt: skip


def _judges_vs_human(model: ScoreModel, resp: np.ndarray, human: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per judge, on the (answer, factor) units it scored and a person labelled."""
    F = max(len(model.factors), 1)
    fcode = {f: i for i, f in enumerate(model.factors)}
    f_h = np.array([fcode.get(f, -1) for f in human["factor"]], np.int64)
    ok = (resp >= 0) & (f_h >= 0)
    ref = dict(zip((resp[ok] * F + f_h[ok]).tolist(), human["score"].to_numpy()[ok].tolist(), strict=True))
    key = model.u_resp.astype(np.int64) * F + model.u_factor.astype(np.int64)
    out = {}
    for j, name in enumerate(model.judges):
        mine = np.flatnonzero((model.u_judge == j) & np.isin(key, list(ref)))
        jv = model.u_value[mine].astype(np.float64)
        rv = np.array([ref[int(k)] for k in key[mine]], np.float64)
        out[name] = agreement_with(jv, rv)
    return out


def _judges_vs_gold(model: ScoreModel, resp: np.ndarray, gold: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per judge, per answer: its mean over the factors it scored against the answer's gold
    (the mean of its gold scores): gold judges whole answers, not rubric factors."""
    ok = resp >= 0
    g = pd.Series(gold["score"].to_numpy()[ok]).groupby(resp[ok]).mean()
    pr, pj, pm = model.per_judge_response()
    out = {}
    for j, name in enumerate(model.judges):
        sel = (pj == j) & np.isin(pr, g.index.to_numpy())
        out[name] = agreement_with(pm[sel].astype(np.float64), g.reindex(pr[sel]).to_numpy(np.float64))
    return out


# ------------------------------------------------------------------------------------------
# the students by human labels alone, and what more labels would settle


def human_ranking(
    model: ScoreModel, resp: np.ndarray, human: pd.DataFrame, boot: Bootstrap | None, level: float
) -> dict[str, Any] | None:
    """Students by the mean of their labelled answers' human scores (an answer's score: the
    mean over its labelled factors), with bootstrap intervals over the labelled datapoints
    and rank ranges; None unless two students have :data:`MIN_HUMAN_ANSWERS` labelled answers."""
    ok = resp >= 0
    if not ok.any():
        return None
    per_answer = pd.Series(human["score"].to_numpy()[ok]).groupby(resp[ok]).mean()
    r = per_answer.index.to_numpy().astype(np.int64)
    items, item_of = np.unique(model.resp_item[r], return_inverse=True)
    student = model.resp_student[r]
    counts = np.bincount(student, minlength=model.n_students)
    ranked = [i for i in range(model.n_students) if counts[i] >= MIN_HUMAN_ANSWERS]
    if len(ranked) < 2:
        return None
    num = np.zeros((len(items), model.n_students))
    den = np.zeros_like(num)
    num[item_of, student] = per_answer.to_numpy()
    den[item_of, student] = 1.0
    keep = np.zeros(model.n_students, bool)
    keep[ranked] = True
    tot = den.sum(0)
    score = np.where(keep & (tot > 0), num.sum(0) / np.maximum(tot, 1), np.nan)
    n_boot = boot.n_boot if boot is not None else 0
    sub = Bootstrap(len(items), n_boot, boot.seed if boot is not None else 0) if n_boot else None
    reps = sub.replicates(num, den) if sub is not None else np.zeros((0, model.n_students))
    reps = np.where(keep[None, :], reps, np.nan)
    lo, hi = percentile_interval(reps, level) if len(reps) else (score * np.nan, score * np.nan)
    comp = compare_students(list(model.students), score, reps, level)
    students = {}
    order = sorted(ranked, key=lambda i: (-score[i], model.students[i]))
    for i in order:
        rr = comp.rank_range[i]
        students[model.students[i]] = {
            "score": float(score[i]), "ci": [finite_or_none(lo[i]), finite_or_none(hi[i])], "n_answers": int(counts[i]),
            "rank_range": list(rr) if rr else None, "rank_label": rank_label(rr) if rr else None,
        }  # fmt: skip
    return {"students": students, "min_answers": MIN_HUMAN_ANSWERS}


def labels_needed(
    comparisons: Sequence[dict[str, Any]], have: dict[str, int], spread: float, level: float, n_factors: int,
    answers_of: dict[str, int],
) -> dict[str, Any]:
    """An estimate of the labels that would settle the undetermined comparisons (difference
    interval containing 0): for each such pair, the labelled answers per student that give a
    human-only difference interval narrower than the pair's headline difference
    (``2 (z s / d)^2``, ``s`` the spread of answer scores, ``d`` the difference, at least
    :data:`_SMALLEST_GAP`), capped at the student's answers; minus what each already has."""
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + level / 2))
    open_pairs = [c for c in comparisons if c.get("ci") and c["ci"][0] is not None and c["ci"][0] <= 0 <= c["ci"][1]]
    # a pair without an interval (too few datapoints) is not determined either, and labels cannot settle it
    no_intervals = bool(comparisons) and all(not c.get("ci") or c["ci"][0] is None for c in comparisons)
    want: dict[str, int] = {}
    for c in open_pairs:
        d = max(abs(float(c["diff"])), _SMALLEST_GAP)
        n = math.ceil(2 * (z * spread / d) ** 2)
        for s in (c["a"], c["b"]):
            want[s] = max(want.get(s, 0), min(n, answers_of.get(s, n)))
    more_answers = {s: max(0, n - have.get(s, 0)) for s, n in want.items()}
    total = sum(more_answers.values())
    return {
        "undetermined_pairs": len(comparisons) if no_intervals else len(open_pairs),
        "no_intervals": no_intervals,
        "more_answers": total,
        "more_labels": total * max(n_factors, 1),
        "students": {s: n for s, n in sorted(more_answers.items()) if n},
    }


#: what the labels line adds when the labels do not move the headline (the fit with them
#: gives the scores the fit without them gives)
NOT_IN_HEADLINE = (
    " They do not move the headline yet: the fit with them gives the scores it gives without them (too few on "
    "the same datapoints, or agreeing with the judges no better than chance): label several students' answers to "
    "the same datapoints."
)
#: the warning beside it (the console prints both: the warning says that, the line what to do)
REFERENCE_NOT_MEASURED = (
    "the human labels do not move the headline yet: the fit with them gives the scores it gives without them "
    "(the labels line says what to label)"
)


def _line(n_labels: int, n_answers: int, n_stale: int, need: dict[str, Any], in_headline: bool | None = None) -> str:
    head = f"{n_labels} human label{'s' if n_labels != 1 else ''} on {n_answers} answer{'s' if n_answers != 1 else ''}"
    if n_stale:
        head += f" ({n_stale} stale: their answer was regenerated, not used)"
    return _needed_clause(head, need) + (NOT_IN_HEADLINE if in_headline is False else "")


def _needed_clause(head: str, need: dict[str, Any]) -> str:
    pairs = need["undetermined_pairs"]
    if need.get("no_intervals"):
        return head + "; no comparison has an interval (too few datapoints, or the bootstrap is off), so none is settled."
    if not pairs:
        return head + "; every comparison of the headline is already determined."
    if not need["more_labels"]:
        return head + f"; {pairs} comparison(s) stay undetermined although the labels should suffice."
    return (f"{head}; about {need['more_labels']} more ({need['more_answers']} answers x each rubric factor) "
            f"would settle the {pairs} undetermined comparison{'s' if pairs != 1 else ''} (estimate).")


def labellable_factors(data: RunData, model: ScoreModel) -> int:
    """The factors a person labels per answer: the judges' factors (a check, a code test, a
    metric or a label attribute is scored without anyone), the median over tasks."""
    counts = [len([f for f in llm_factors(r) if f not in set(data.label_attributes.get(t, []))])
              for t, r in data.rubrics.items()]  # fmt: skip
    counts = [c for c in counts if c]
    if counts:
        return max(int(np.median(counts)), 1)
    judged = np.unique(model.u_factor) if len(model.u_factor) else np.zeros(0)
    return max(len(judged), 1)


def reference_summary(
    data: RunData, model: ScoreModel, labels: Sequence[HumanLabel], comparisons: Sequence[dict[str, Any]],
    boot: Bootstrap | None, level: float, *, always: bool = False, in_headline: bool | None = None,
) -> dict[str, Any] | None:
    """``summary.json`` ``reference``: None when the run has neither labels nor gold (unless
    ``always``: the Label page says how many labels would settle a run that has none).
    ``in_headline``: whether the human labels move the headline (see
    :func:`coeval_analysis.ranking.headline.reference_in_headline`); None when not known."""
    ref = reference_table(data, labels)
    if ref.empty and not labels and not always:
        return None
    resp = _response_codes(data, model, ref)
    is_h = (ref["source"] == "human").to_numpy()
    human, gold = ref[is_h].reset_index(drop=True), ref[~is_h].reset_index(drop=True)
    r_h, r_g = resp[is_h], resp[~is_h]
    judges: dict[str, Any] = {j: {} for j in model.judges}
    if len(human):
        for j, v in _judges_vs_human(model, r_h, human).items():
            judges[j]["human"] = v
    if len(gold):
        for j, v in _judges_vs_gold(model, r_g, gold).items():
            judges[j]["gold"] = v
    fresh = [lab for lab in labels if not lab.stale]
    answered = r_h[r_h >= 0]
    n_answers = len({(lab.datapoint_id, lab.student) for lab in fresh})
    have = pd.Series(np.asarray(model.students, dtype=object)[model.resp_student[np.unique(answered)]]).value_counts()
    scored = model.scored_responses()
    answers_of = pd.Series(np.asarray(model.students, dtype=object)[model.resp_student[scored]]).value_counts()
    h_scores = pd.Series(human["score"].to_numpy()[r_h >= 0]).groupby(answered).mean().to_numpy()
    spread = float(np.std(h_scores, ddof=1)) if len(h_scores) >= 10 else float(np.nanstd(model.resp_score[scored]))
    n_factors = labellable_factors(data, model)
    need = labels_needed(comparisons, {str(k): int(v) for k, v in have.items()}, spread, level, n_factors,
                         {str(k): int(v) for k, v in answers_of.items()})  # fmt: skip
    labelers: dict[str, int] = {}
    for lab in fresh:
        labelers[lab.labeler] = labelers.get(lab.labeler, 0) + 1
    n_stale = sum(lab.stale for lab in labels)
    return {
        "n_labels": len(fresh),
        "n_answers": n_answers,
        "n_stale": n_stale,
        "labelers": dict(sorted(labelers.items())),
        "n_gold": len(gold),
        "judges": {j: v for j, v in judges.items() if v},
        "human_ranking": human_ranking(model, r_h, human, boot, level) if len(human) else None,
        "needed": need,
        "in_headline": in_headline,
        "line": _line(len(fresh), n_answers, n_stale, need, in_headline),
    }
