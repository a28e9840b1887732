"""Which answer to label next: the one whose label would most narrow what the ranking
cannot yet tell.

A label helps in two ways. It places a student directly (worth most for a student whose
rank range overlaps others': its place is not determined), and it calibrates the judges
that graded the answer (worth most for the judges whose scale and bias are least known,
i.e. that share the fewest units with the reference, and on answers the judges disagree
about). Each unlabelled answer gets the priority

    (student_open[s] + JUDGE_SHARE * mean judge_open[j over its judges]) x (1 + 2 x spread)
    / (1 + labelled answers of s)

where ``spread`` is the standard deviation of its judges' scores. Answers are taken
greedily: after each pick the student's count goes up (so labels spread over the
undetermined students), and the other answers to the same datapoint gain
:data:`PAIR_BOOST` (two students labelled on one prompt compare them paired). Ties go
to the lower (datapoint, student). (Once per datapoint, so labels still spread
over prompts.)

What is "open" comes from :class:`Uncertainty`, built by a small function from the
analysis's outputs (:func:`uncertainty_from_summary`: today's rank ranges and the
reference's shared units per judge), so a richer model can feed it its own measures.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "JUDGE_SHARE",
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


@dataclass(frozen=True)
class Candidate:
    """An answer that could be labelled, with what its judges made of it."""

    datapoint_id: str
    student: str
    response_id: str
    judges: tuple[str, ...]
    spread: float  #: standard deviation of its judges' scores (0 with one judge)


def uncertainty_from_summary(summary: Mapping[str, Any]) -> Uncertainty:
    """From ``summary.json``: a student is as open as the share of the other students its
    rank range overlaps (all open without intervals); a judge is open by
    ``HALF / (HALF + shared reference units)``."""
    students = summary.get("students") or {}
    ranges: dict[str, tuple[int, int]] = {}
    for s, v in students.items():
        r = v.get("rank_range") if isinstance(v, dict) else None
        if isinstance(r, list) and len(r) == 2:
            ranges[s] = (int(r[0]), int(r[1]))
    others = max(len(ranges) - 1, 1)
    student_open: dict[str, float] = {}
    for s, (lo, hi) in ranges.items():
        overlap = sum(1 for t, (lo2, hi2) in ranges.items() if t != s and lo2 <= hi and lo <= hi2) / others
        unrelated = students[s].get("unrelated_judge_weight") if isinstance(students[s], dict) else None
        if isinstance(unrelated, int | float):  # what unrelated judges already settle, a label settles less
            overlap *= 1.0 - _SETTLED_BY_UNRELATED * min(max(float(unrelated), 0.0), 1.0)
        student_open[s] = overlap
    judge_open: dict[str, float] = {}
    ref_judges = (summary.get("reference") or {}).get("judges") or {}
    for j, v in (summary.get("judges") or {}).items():
        entry = ref_judges.get(j) or {}
        shared = sum(int((entry.get(src) or {}).get("n") or 0) for src in ("human", "gold"))
        prior = v.get("family_bias_prior_share") if isinstance(v, dict) else None
        unknown = _HALF_KNOWN / (_HALF_KNOWN + shared)
        # a family bias that rests on the prior stays open however many answers it shares
        judge_open[j] = max(unknown, float(prior)) if isinstance(prior, int | float) else unknown
    return Uncertainty(student_open, judge_open)


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
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def candidates_from(data: Any) -> list[Candidate]:
    """Every scored answer of a loaded run (:class:`~coeval_analysis.data.RunData`), with
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
    have = np.zeros(len(students))
    for (_dp, s), n in labelled.items():
        if n:
            have[s_idx[s]] += 1
    stu = np.array([s_idx[c.student] for c in pool])
    s_open = np.array([float(uncertainty.student_open.get(s, 1.0)) for s in students])
    j_open = np.array([
        float(np.mean([uncertainty.judge_open.get(j, 1.0) for j in c.judges])) if c.judges else 1.0 for c in pool
    ])  # fmt: skip
    spread = np.array([c.spread for c in pool])
    static = (s_open[stu] + JUDGE_SHARE * j_open) * (1.0 + 2.0 * spread)
    dps, dp_of = np.unique([c.datapoint_id for c in pool], return_inverse=True)
    del dps
    chosen: list[Candidate] = []
    taken = np.zeros(len(pool), bool)
    boosted = np.zeros(int(dp_of.max()) + 1, bool)
    for _ in range(min(k, len(pool))):
        prio = np.where(taken, -np.inf, static / (1.0 + have[stu]))
        best = int(np.argmax(prio))
        taken[best] = True
        chosen.append(pool[best])
        have[stu[best]] += 1
        if not boosted[dp_of[best]]:
            boosted[dp_of[best]] = True
            static[(dp_of == dp_of[best]) & ~taken] *= PAIR_BOOST
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
    from coeval_analysis.loader import load_run

    data = load_run(run)
    summary = fresh_summary(run)
    if summary is None:
        summary = analyze(data, AnalysisOptions(n_boot=n_boot), human_labels=labels).summary
    picks = suggest(candidates_from(data), uncertainty_from_summary(summary), labelled_answers(labels), k)
    if not summary.get("reference"):  # no labels nor gold yet: still say how many would settle it
        from coeval_analysis.reference_judge import reference_summary
        from coeval_analysis.stats.scores import ScoreModel

        level = float((summary.get("settings") or {}).get("level") or 0.95)
        ref = reference_summary(data, ScoreModel.build(data), [], summary.get("comparisons") or [], None, level,
                                always=True)  # fmt: skip
        summary = {**summary, "reference": ref}
    return picks, summary
