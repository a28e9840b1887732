"""Warnings a user will read: the few findings that change how far to trust the ranking.

Each is ``{"kind", "subject", "message"}``; the console prints the messages, summary.json
keeps the list as ``warnings`` and the report shows them at the top.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from coeval_analysis.stats.scores import ScoreModel

__all__ = ["MIN_DATAPOINTS", "ONE_LEVEL_SHARE", "PREFERENCE_Z", "collect_warnings"]

PREFERENCE_Z = 3.0  #: bias / standard error above which a self- or family preference is reported
PREFERENCE_MIN = 0.05  #: and the bias itself at least this (on the 0..1 score scale)
ONE_LEVEL_SHARE = 0.95  #: a judge giving one level to more than this share of answers
MIN_LEVELS = 50  #: ... judged on at least this many (answer, factor) units
MIN_DATAPOINTS = 20  #: intervals resting on fewer datapoints than this are flagged
#: a student whose unrelated judges hold less than this share of the weight is flagged
UNRELATED_WEIGHT_FLOOR = 0.25


def _preference(self_pref: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for kind, what in (("judge_is_student", "its own answers"), ("same_family", "its family's answers")):
        for judge, v in self_pref.get(kind, {}).items():
            bias, se = v.get("bias"), v.get("se")
            if bias is None or not se or bias < PREFERENCE_MIN or bias / se < PREFERENCE_Z:
                continue
            out.append(
                {
                    "kind": "self_preference" if kind == "judge_is_student" else "family_preference",
                    "subject": judge,
                    "message": (
                        f"judge {judge} scores {what} {bias:+.2f} higher than unrelated judges do "
                        f"(z {bias / se:.0f}); these judgments are left out of the headline ranking"
                    ),
                }
            )
    return out


def _one_level(model: ScoreModel) -> list[dict[str, Any]]:
    out = []
    cat = model.u_level >= 0
    for jdx, judge in enumerate(model.judges):
        levels = model.u_level[cat & (model.u_judge == jdx)]
        if len(levels) < MIN_LEVELS:
            continue
        counts = np.bincount(levels.astype(np.int64), minlength=3)
        share = counts.max() / counts.sum()
        if share > ONE_LEVEL_SHARE:
            level = ("Low", "Medium", "High")[int(counts.argmax())]
            out.append(
                {
                    "kind": "one_level",
                    "subject": judge,
                    "message": (
                        f"judge {judge} gives {level} to {share:.0%} of answers: it barely tells answers "
                        "apart, and its kappa with other judges is near 0 whatever they do"
                    ),
                }
            )
    return out


def _few_datapoints(students: dict[str, Any], n_items: int) -> list[dict[str, Any]]:
    thin = sorted(s for s, v in students.items() if 0 < v.get("n_items", n_items) < MIN_DATAPOINTS)
    if n_items and n_items < MIN_DATAPOINTS:
        return [
            {
                "kind": "few_datapoints",
                "subject": None,
                "message": (
                    f"intervals rest on {n_items} datapoints (fewer than {MIN_DATAPOINTS}): treat them as rough"
                ),
            }
        ]
    if thin:
        return [
            {
                "kind": "few_datapoints",
                "subject": ", ".join(thin),
                "message": f"scores of {', '.join(thin)} rest on fewer than {MIN_DATAPOINTS} datapoints",
            }
        ]
    return []


def _missing(students: dict[str, Any], gap: float) -> list[dict[str, Any]]:
    rates = {s: v["missing_rate"] for s, v in students.items() if v.get("missing_rate") is not None}
    if len(rates) < 2 or max(rates.values()) - min(rates.values()) <= gap:
        return []
    worst = max(rates, key=lambda s: rates[s])
    return [
        {
            "kind": "missing_data",
            "subject": worst,
            "message": (
                f"students lack scores on different shares of their answers ({min(rates.values()):.0%} to "
                f"{rates[worst]:.0%}, {worst} most): see the ranking on the datapoints every student answered"
            ),
        }
    ]


def _weak_judges(students: dict[str, Any], floor: float) -> list[dict[str, Any]]:
    weak = {s: v["unrelated_judge_weight"] for s, v in students.items()
            if v.get("unrelated_judge_weight") is not None and v.get("robust_score") is not None
            and v["unrelated_judge_weight"] < floor}  # fmt: skip
    if not weak:
        return []
    names = ", ".join(f"{s} ({w:.0%})" for s, w in sorted(weak.items()))
    return [
        {
            "kind": "weak_unrelated_judges",
            "subject": ", ".join(sorted(weak)),
            "message": (
                f"the judges unrelated to {names} hold little of the judge weight: their headline "
                "scores rest on the least trusted judges; add an unrelated judge"
            ),
        }
    ]


def _no_unrelated_judge(students: dict[str, Any]) -> list[dict[str, Any]]:
    """Students the plain mean scores but the headline cannot: every judge is of their family."""
    alone = sorted(s for s, v in students.items() if v.get("score") is not None and v.get("robust_score") is None)
    if not alone:
        return []
    return [
        {
            "kind": "no_unrelated_judge",
            "subject": ", ".join(alone),
            "message": (
                f"no judge outside the family of {', '.join(alone)}: the conflict-aware headline leaves "
                "them unscored and only the plain mean ranks them; add a judge of another family, or "
                "set models[].family where the inferred family is wrong"
            ),
        }
    ]


def collect_warnings(
    model: ScoreModel, summary: dict[str, Any], converged: bool, iterations: int, gap: float
) -> list[dict[str, Any]]:
    """Every warning of a summary (students, self_preference and robust fields filled)."""
    out = _preference(summary.get("self_preference", {}))
    out += _one_level(model)
    out += _few_datapoints(summary["students"], model.n_items)
    out += _missing(summary["students"], gap)
    out += _weak_judges(summary["students"], UNRELATED_WEIGHT_FLOOR)
    out += _no_unrelated_judge(summary["students"])
    if not converged:
        out.append(
            {
                "kind": "not_converged",
                "subject": None,
                "message": (
                    f"judge weights did not converge in {iterations} iterations: "
                    "the headline ranking is provisional"
                ),
            }
        )
    return out
