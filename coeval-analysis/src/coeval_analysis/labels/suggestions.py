"""Which answer to label next: the one whose label would most narrow the comparisons the
headline cannot yet decide.

Only the **undetermined pairs** count: two students whose paired interval contains 0 (from
``summary.json``'s ``comparisons``; without intervals, two students whose rank ranges
overlap). Each student's own variance ``v_s`` is the non-negative part of the paired
differences' variances that is its own (``v_a + v_b`` best gives every pair's variance,
its interval's width / 2z squared); of it, the share ``1 - unrelated_judge_weight`` is
what labels can remove (what unrelated judges that tell answers apart already settle, a
label settles no better). A label of student ``s`` adds ``1 / LABEL_SD^2`` of information
on that removable part, so after ``n`` labels it is ``1 / (1 / r_s + n / LABEL_SD^2)``.
The next label of ``s`` is worth what it removes from the variance of each undetermined
pair it is in, as a share of that pair's variance:

    gain(s) = sum over undetermined pairs (s, t) of drop_s(n_s) / (V_s(n_s) + V_t(n_t))

so the students whose places rest on judges that cannot rank them take the labels until
they are as well known as the students they are compared with, and a student whose every
comparison is decided gets none: the returns diminish only within the pairs.

The labels are a judge too, whose scale is measured like any judge's on answers the other
(unrelated) judges pin down: so that it is, :data:`CALIBRATION` of the labels go to the
best-settled students (highest ``unrelated_judge_weight``), in turn, on the datapoints
already picked where the boost below allows. Each unlabelled answer's priority is

    value(student) x (1 + JUDGE_SHARE x mean judge_open over its judges) x (1 + 2 x spread)

(``judge_open``: how little is known of a judge's scale and bias; ``spread``: the
standard deviation of its judges' scores, an answer the judges dispute tells most about
who is right). With no undetermined pair left, ``value`` is the judge term alone divided
by ``1 + labels of the student`` (labels then calibrate the judges). Answers are taken
greedily, the values updated after each pick; the first pick on a datapoint gives the
other answers to it :data:`PAIR_BOOST` (students labelled on one prompt are compared
paired, and the labels' scale is measured within datapoints). Ties go to the lower
(datapoint, student). Deterministic, and a few array operations per pick.

What is open comes from :class:`Uncertainty`, built by a small function from the
analysis's outputs (:func:`uncertainty_from_summary`), so a richer model can feed it its
own measures.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

from coeval_analysis.loading.run_files import read_text

__all__ = [
    "CALIBRATION",
    "JUDGE_SHARE",
    "LABEL_SD",
    "PAIR_BOOST",
    "Candidate",
    "Uncertainty",
    "candidates_from",
    "fresh_summary",
    "labelled_answers",
    "order_with_summary",
    "suggest",
    "suggestion_order",
    "uncertainty_from_summary",
]

#: weight of judge calibration beside placing a student
JUDGE_SHARE = 0.25
#: standard deviation of one labelled answer around its student's score (0-1 scale): the
#: datapoint's difficulty, the answer's own quality and the labeller's noise together
LABEL_SD = 0.15
#: share of the labels kept on answers the unrelated judges settle, so that the labels' own
#: scale is measured (a reference judge is checked against the others like any judge)
CALIBRATION = 0.5
#: students the unrelated judges settle within this share of the best-settled one calibrate
_BEST_SETTLED = 0.9
#: standard error assumed for a student without an interval
_SD_UNKNOWN = 1.0
#: priority factor of the other answers to a datapoint just picked
PAIR_BOOST = 1.5
#: shared reference units at which a judge counts as half known
_HALF_KNOWN = 20.0
#: share of a student's openness that information from unrelated judges which tell answers
#: apart removes (a student they fully inform keeps the rest: labels still narrow it)
_SETTLED_BY_UNRELATED = 0.75


@dataclass(frozen=True)
class Uncertainty:
    """How undetermined each student's place (``student_open``) and each judge's scale and
    bias (``judge_open``) are, each in [0, 1]; a name not listed counts as fully open."""

    student_open: Mapping[str, float]
    judge_open: Mapping[str, float]
    #: standard error of each student's score (a name not listed: unknown, wide)
    student_sd: Mapping[str, float] = field(default_factory=dict)
    #: the undetermined pairs; None: every pair of students both open
    pairs: Sequence[tuple[str, str]] | None = None
    #: share of each student's variance that labels can remove (not listed: all of it)
    removable: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Candidate:
    """An answer that could be labelled, with what its judges made of it."""

    datapoint_id: str
    student: str
    response_id: str
    judges: tuple[str, ...]
    spread: float  #: standard deviation of its judges' scores (0 with one judge)


def uncertainty_from_summary(summary: Mapping[str, Any]) -> Uncertainty:
    """From ``summary.json``: the undetermined pairs (paired interval containing 0; without
    intervals, overlapping rank ranges), each student's standard error (its interval's
    width / 2z) and openness (the share of the other students its rank range overlaps, all
    open without intervals, less what unrelated judges already settle), and each judge's
    openness ``HALF / (HALF + shared reference units)``, or its family bias's prior share
    when larger."""
    students = summary.get("students") or {}
    ranges: dict[str, tuple[int, int]] = {}
    sd: dict[str, float] = {}
    level = float((summary.get("settings") or {}).get("level") or 0.95)
    z = float(NormalDist().inv_cdf(0.5 + level / 2.0))
    for s, v in students.items():
        r = v.get("rank_range") if isinstance(v, dict) else None
        if isinstance(r, list) and len(r) == 2:
            ranges[s] = (int(r[0]), int(r[1]))
    others = max(len(ranges) - 1, 1)
    removable: dict[str, float] = {}
    for s, v in students.items():
        unrelated = v.get("unrelated_judge_weight") if isinstance(v, dict) else None
        if isinstance(unrelated, int | float):
            removable[s] = 1.0 - min(max(float(unrelated), 0.0), 1.0)
    student_open: dict[str, float] = {}
    for s, (lo, hi) in ranges.items():
        overlap = sum(1 for t, (lo2, hi2) in ranges.items() if t != s and lo2 <= hi and lo <= hi2) / others
        unrelated = students[s].get("unrelated_judge_weight") if isinstance(students[s], dict) else None
        if isinstance(unrelated, int | float):  # what unrelated judges already settle, a label settles less
            overlap *= 1.0 - _SETTLED_BY_UNRELATED * min(max(float(unrelated), 0.0), 1.0)
        student_open[s] = overlap
    pairs: list[tuple[str, str]] | None = None
    tested = [c for c in summary.get("comparisons") or []
              if isinstance(c, dict) and all(isinstance(x, int | float) for x in c.get("ci") or [None])]  # fmt: skip
    if tested:
        pairs = [(str(c["a"]), str(c["b"])) for c in tested if float(c["ci"][0]) <= 0.0 <= float(c["ci"][1])]
        sd = _own_sd(tested, z)
    elif ranges:
        names = sorted(ranges)
        pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]
                 if ranges[b][0] <= ranges[a][1] and ranges[a][0] <= ranges[b][1]]  # fmt: skip
    judge_open: dict[str, float] = {}
    ref_judges = (summary.get("reference") or {}).get("judges") or {}
    for j, v in (summary.get("judges") or {}).items():
        entry = ref_judges.get(j) or {}
        shared = sum(int((entry.get(src) or {}).get("n") or 0) for src in ("human", "gold"))
        prior = v.get("family_bias_prior_share") if isinstance(v, dict) else None
        unknown = _HALF_KNOWN / (_HALF_KNOWN + shared)
        # a family bias that rests on the prior stays open however many answers it shares
        judge_open[j] = max(unknown, float(prior)) if isinstance(prior, int | float) else unknown
    return Uncertainty(student_open, judge_open, sd, pairs, removable)


def _own_sd(tested: Sequence[Mapping[str, Any]], z: float) -> dict[str, float]:
    """Each student's own standard error, apart from what the datapoints' difficulty moves
    in every student at once: the non-negative ``v`` that best give every paired
    difference's variance (its interval's width / 2z, squared) as ``v_a + v_b``."""
    from scipy.optimize import nnls

    names = sorted({str(c[k]) for c in tested for k in ("a", "b")})
    idx = {n: i for i, n in enumerate(names)}
    design = np.zeros((len(tested), len(names)))
    target = np.zeros(len(tested))
    for row, c in enumerate(tested):
        design[row, idx[str(c["a"])]] = design[row, idx[str(c["b"])]] = 1.0
        target[row] = (max(float(c["ci"][1]) - float(c["ci"][0]), 0.0) / (2.0 * z)) ** 2
    if len(names) < 3:  # one pair: its two sides cannot be told apart, so share it
        return {n: float(np.sqrt(target.mean() / 2.0)) for n in names}
    own = nnls(design, target)[0]
    return {n: float(np.sqrt(own[idx[n]])) for n in names}


def fresh_summary(run: Path) -> dict[str, Any] | None:
    """``<run>/analysis/summary.json`` when it is newer than every record and label of the
    run (else None: the caller analyses the run again)."""
    path = run / "analysis" / "summary.json"
    try:
        written = path.stat().st_mtime_ns
        inputs = [p for d in ("phase3_datapoints", "phase4_responses", "phase5_evaluations")
                  for p in (run / d).glob("*.jsonl")]  # fmt: skip
        inputs += [p for p in (run / "human_labels.jsonl",) if p.exists()]
        if any(p.stat().st_mtime_ns > written for p in inputs):
            return None
        found = json.loads(read_text(path, run))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def candidates_from(data: Any) -> list[Candidate]:
    """Every scored answer of a loaded run (:class:`~coeval_analysis.loading.run_data.RunData`), with
    the LLM judges that graded it and the spread of their scores."""
    from coeval_analysis.stats.scores import ScoreModel

    model = ScoreModel.build(data)
    pr, pj, pm = model.per_judge_response()
    r = model.scored_responses()
    n = model.n_responses
    cnt = np.bincount(pr, minlength=n).astype(np.float64)
    s1 = np.bincount(pr, weights=pm, minlength=n)
    s2 = np.bincount(pr, weights=pm * pm, minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.where(cnt > 1, (s2 - s1 * s1 / np.maximum(cnt, 1)) / np.maximum(cnt - 1, 1), 0.0)
    judges_of: dict[int, list[str]] = {}
    for resp, j in zip(pr.tolist(), pj.tolist(), strict=True):
        judges_of.setdefault(resp, []).append(model.judges[j])
    dp_ids = np.asarray(data.datapoint_ids, dtype=object)
    resp_ids = np.asarray(data.response_ids, dtype=object)
    out = [
        Candidate(str(dp_ids[model.items[model.resp_item[c]]]), model.students[model.resp_student[c]],
                  str(resp_ids[c]), tuple(sorted(judges_of.get(int(c), ()))), float(np.sqrt(max(var[c], 0.0))))
        for c in r
    ]  # fmt: skip
    return sorted(out, key=lambda c: (c.datapoint_id, c.student))


def suggest(
    candidates: Sequence[Candidate],
    uncertainty: Uncertainty,
    labelled: Mapping[tuple[str, str], int],
    k: int,
) -> list[Candidate]:
    """The ``k`` answers to label next, best first (see the module docstring); answers in
    ``labelled`` ((datapoint, student) -> labels it has) are left out."""
    pool = [c for c in candidates if not labelled.get((c.datapoint_id, c.student))]
    if not pool or k <= 0:
        return []
    students = sorted({c.student for c in pool} | {s for _, s in labelled})
    s_idx = {s: i for i, s in enumerate(students)}
    S = len(students)
    have = np.zeros(S)
    for (_dp, s), n in labelled.items():
        if n:
            have[s_idx[s]] += 1
    pairs = uncertainty.pairs
    if pairs is None:  # no tests: every pair of open students
        opened = [s for s in students if uncertainty.student_open.get(s, 1.0) > 0]
        pairs = [(a, b) for i, a in enumerate(opened) for b in opened[i + 1 :]]
    pa = np.array([s_idx[a] for a, b in pairs if a in s_idx and b in s_idx and a != b], np.int64)
    pb = np.array([s_idx[b] for a, b in pairs if a in s_idx and b in s_idx and a != b], np.int64)
    own = np.array([uncertainty.student_sd.get(s, _SD_UNKNOWN) ** 2 for s in students])
    share = np.array([min(max(uncertainty.removable.get(s, 1.0), 0.0), 1.0) for s in students])
    fixed = own * (1.0 - share)  # what no label removes (the unrelated judges' view already settles it)
    prior_prec = 1.0 / np.maximum(own * share, 1e-12)
    per_label = 1.0 / LABEL_SD**2
    # the labels' own scale is measured on answers whose quality the unrelated judges
    # already pin down (a student's settled share: 1 - removable): CALIBRATION of the labels
    # go there, paired with the undetermined students' where the boost allows
    settled = 1.0 - share
    calibrating = bool(uncertainty.removable) and bool(settled.any())
    settled = (settled >= _BEST_SETTLED * settled.max(initial=0.0)).astype(np.float64) if calibrating else settled
    n_cal = float((have * settled).sum())
    stu = np.array([s_idx[c.student] for c in pool])
    j_open = np.array([
        float(np.mean([uncertainty.judge_open.get(j, 1.0) for j in c.judges])) if c.judges else 1.0 for c in pool
    ])  # fmt: skip
    spread = np.array([c.spread for c in pool])
    judge_term = (1.0 + JUDGE_SHARE * j_open) * (1.0 + 2.0 * spread)
    _dps, dp_of = np.unique([c.datapoint_id for c in pool], return_inverse=True)
    chosen: list[Candidate] = []
    taken = np.zeros(len(pool), bool)
    boost = np.ones(len(pool))
    boosted = np.zeros(int(dp_of.max()) + 1, bool)
    for _ in range(min(k, len(pool))):
        var_now = 1.0 / (prior_prec + have * per_label)
        gain = np.zeros(S)
        if len(pa):  # each undetermined pair: what the next label of either side removes, as a share
            pair_var = var_now[pa] + var_now[pb] + fixed[pa] + fixed[pb]
            drop = var_now - 1.0 / (prior_prec + (have + 1.0) * per_label)
            gain += np.bincount(pa, drop[pa] / pair_var, S) + np.bincount(pb, drop[pb] / pair_var, S)
        if calibrating and gain.any() and n_cal < CALIBRATION * (have.sum() + 1.0):
            value = settled[stu] / (1.0 + have[stu])  # calibrate: the most settled students, in turn
        else:
            value = gain[stu] if gain.any() else JUDGE_SHARE * j_open / (1.0 + have[stu])
        prio = np.where(taken, -np.inf, value * judge_term * boost)
        best = int(np.argmax(prio))
        taken[best] = True
        chosen.append(pool[best])
        s_best = stu[best]
        have[s_best] += 1
        n_cal += float(settled[s_best])
        if not boosted[dp_of[best]]:
            boosted[dp_of[best]] = True
            boost[(dp_of == dp_of[best]) & ~taken] *= PAIR_BOOST
    return chosen


def labelled_answers(labels: Sequence[Any]) -> dict[tuple[str, str], int]:
    """(datapoint, student) -> fresh labels it has (of anyone), from :class:`HumanLabel` s."""
    out: dict[tuple[str, str], int] = {}
    for lab in labels:
        if not lab.stale:
            key = (lab.datapoint_id, lab.student)
            out[key] = out.get(key, 0) + 1
    return out


def suggestion_order(run: Path, labels: Sequence[Any], k: int, n_boot: int = 200) -> list[Candidate]:
    """The run's next ``k`` answers to label (see :func:`order_with_summary`)."""
    return order_with_summary(run, labels, k, n_boot)[0]


def order_with_summary(
    run: Path, labels: Sequence[Any], k: int, n_boot: int = 200
) -> tuple[list[Candidate], dict[str, Any]]:
    """The run's next ``k`` answers to label and the summary they were chosen from: its last
    analysis when that is newer than its records and labels, else a quick one (``n_boot``
    resamples)."""
    from coeval_analysis.analysis import AnalysisOptions, analyze
    from coeval_analysis.loading.loader import load_run

    data = load_run(run)
    summary = fresh_summary(run)
    if summary is None:
        summary = analyze(data, AnalysisOptions(n_boot=n_boot), human_labels=labels).summary
    picks = suggest(candidates_from(data), uncertainty_from_summary(summary), labelled_answers(labels), k)
    if not summary.get("reference"):  # no labels nor gold yet: still say how many would settle it
        from coeval_analysis.labels.reference_judge import reference_summary
        from coeval_analysis.stats.scores import ScoreModel

        level = float((summary.get("settings") or {}).get("level") or 0.95)
        ref = reference_summary(data, ScoreModel.build(data), [], summary.get("comparisons") or [], None, level,
                                always=True)  # fmt: skip
        summary = {**summary, "reference": ref}
    return picks, summary
