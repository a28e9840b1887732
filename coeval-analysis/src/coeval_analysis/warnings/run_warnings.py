"""Warnings a user will read: the few findings that change how far to trust the ranking.

Each is ``{"kind", "subject", "message"}``; the console prints the messages, summary.json
keeps the list as ``warnings`` and the report shows them at the top.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from coeval.config.task_data import data_teacher

from coeval_analysis.ranking.headline import MIN_INTERVAL_DATAPOINTS, RELIABILITY_FLOOR
from coeval_analysis.stats.scores import ScoreModel

__all__ = ["MIN_DATAPOINTS", "ONE_LEVEL_SHARE", "PREFERENCE_Z", "collect_warnings", "flag_constant_raters"]

PREFERENCE_Z = 3.0  #: bias / standard error above which a self- or family preference is reported
PREFERENCE_MIN = 0.05  #: and the bias itself at least this (on the 0..1 score scale)
ONE_LEVEL_SHARE = 0.95  #: a judge giving one level to more than this share of answers
MIN_LEVELS = 10  #: ... judged on at least this many (answer, factor) units
MIN_DATAPOINTS = 20  #: intervals resting on fewer datapoints than this are flagged
#: a teacher on whose datapoints the students' means spread less than this (separation) is flagged
STUDENTS_ALIKE = 0.05
#: agreement at least this high that includes a one-level judge is flagged as inflated
INFLATED_ALPHA = 0.4


def _preference(self_pref: dict[str, Any], judges: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    out = []
    judges = judges or {}
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
                        f"(z {bias / se:.0f}); "
                        + (
                            "no competent unrelated judge can measure it in the headline, which bounds it by a prior"
                            if (judges.get(judge, {}).get("family_bias_prior_share") or 0) > 0.5
                            else "the headline subtracts the bias it estimates for these judgments"
                        )
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
    if n_items and n_items < MIN_INTERVAL_DATAPOINTS:
        return [
            {
                "kind": "few_datapoints",
                "subject": None,
                "message": (
                    f"too few datapoints ({n_items}, fewer than {MIN_INTERVAL_DATAPOINTS}): no interval, p-value "
                    "or rank is shown, since resampling so few cannot say how far the scores would move"
                ),
            }
        ]
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


def _judge_quality(judges: dict[str, Any]) -> list[dict[str, Any]]:
    """Judges whose scores barely move with answer quality, or move against it."""
    out = []
    for name, j in judges.items():
        rel, scale, n = j.get("reliability"), j.get("scale"), j.get("n_units") or 0
        if rel is None or scale is None:
            continue
        if rel < RELIABILITY_FLOOR and not j.get("checked", True):
            out.append({
                "kind": "flat_judge",
                "subject": name,
                "message": (
                    f"judge {name} cannot be shown to tell answers apart: no other judge that does graded "
                    "enough of the same answers to check it; it counts for almost nothing in the headline "
                    "(add a judge, or label a few answers)"
                ),
            })  # fmt: skip
        elif rel < RELIABILITY_FLOOR:
            out.append({
                "kind": "flat_judge",
                "subject": name,
                "message": (
                    f"judge {name} barely tells answers apart: answer quality explains {rel:.0%} of the spread "
                    f"of its scores (scale {scale:+.2f}, 1 = an average informative judge)"
                    + (f" on the {n} units it graded" if n < 50 else "")
                    + "; it counts for almost nothing in the headline"
                ),
            })  # fmt: skip
        elif scale < 0:
            out.append({
                "kind": "contrary_judge",
                "subject": name,
                "message": (
                    f"judge {name} scores better answers lower (scale {scale:+.2f}): the headline counts its "
                    "scores reversed; check its prompt and parsing"
                ),
            })  # fmt: skip
    return out


def _gold(gold: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Judges, and the headline ranking, that disagree with benchmark gold answers."""
    if not gold:
        return []
    out = []
    for name, v in (gold.get("judges_vs_gold") or {}).items():
        rho = v.get("spearman")
        if rho is not None and rho < 0:
            out.append({"kind": "judge_vs_gold", "subject": name,
                        "message": f"judge {name} disagrees with the gold answers (Spearman {rho:+.2f})"})  # fmt: skip
    rho = (gold.get("ranking_vs_gold") or {}).get("spearman")
    if rho is not None and rho < 0:
        out.append({"kind": "ranking_vs_gold", "subject": None,
                    "message": f"the headline ranking disagrees with the gold ranking (Spearman {rho:+.2f})"})  # fmt: skip
    return out


def _students_alike(teachers: dict[str, Any]) -> list[dict[str, Any]]:
    """Teachers whose datapoints do not separate the students."""
    out = []
    for name, t in teachers.items():
        d = t.get("separation")
        if d is not None and d < STUDENTS_ALIKE:
            out.append({
                "kind": "students_alike",
                "subject": name,
                "message": (
                    f"students score alike on teacher {name}'s datapoints (their means spread {d:.3f}, below "
                    f"{STUDENTS_ALIKE}): they say little about who is better"
                ),
            })  # fmt: skip
    return out


def _not_determined(students: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"kind": "not_determined", "subject": s, "message": f"{s}: not determined: {v['not_determined']}"}
        for s, v in students.items()
        if v.get("not_determined") and v.get("n_items", 0) >= MIN_INTERVAL_DATAPOINTS
    ]


def flag_constant_raters(summary: dict[str, Any]) -> None:
    """Agreement statistics count agreeing on a constant rating as reliability: say so
    (``agreement.constant_raters_note`` and a warning) when a judge gives one level."""
    flat = sorted(w["subject"] for w in summary["warnings"] if w["kind"] == "one_level")
    agreement = summary["agreement"]
    flat = [j for j in flat if j in agreement.get("judges", [])]
    if not flat:
        return
    alpha = agreement.get("krippendorff_alpha")
    note = (
        f"{', '.join(flat)} {'give' if len(flat) > 1 else 'gives'} one level to nearly every answer: agreement with a constant rating "
        "is not evidence of reliability, so alpha, kappa and ICC overstate it"
    )
    agreement["constant_raters_note"] = note
    if alpha is not None and alpha < INFLATED_ALPHA:
        return  # low anyway: nobody reads it as reliability
    shown = f" (Krippendorff's alpha {alpha:.2f})" if alpha is not None else ""
    summary["warnings"].append({"kind": "agreement_inflated", "subject": ", ".join(flat),
                                "message": f"judge agreement{shown} is inflated: {note}"})  # fmt: skip


def _left_out_by_config(quality: dict[str, Any]) -> list[dict[str, Any]]:
    """Models the run's config no longer has, and datapoints above a lowered sampling.total:
    their records are not ranked (as status does)."""
    left = quality.get("left_out_models") or {}
    return [
        {"kind": "left_out_by_config", "subject": name,
         "message": f"{name}: no longer a {role} in the run's config.yaml: its records as {role} stay on disk "
                    "and are left out of the analysis (as coeval status leaves them out)"}
        for role, names in sorted(left.items()) for name in names
    ] + [
        {"kind": "left_out_by_config", "subject": task,
         "message": f"{task}: {n} datapoints {why} stay on disk and are left out of the analysis, with their "
                    "answers and judgments (as coeval status leaves them out)"}
        for task, per in sorted((quality.get("left_out_datapoints") or {}).items())
        for n, why in _left_out_counts(task, per) if n
    ]  # fmt: skip


def _left_out_counts(task: str, per: dict[str, int]) -> list[tuple[int, str]]:
    """A task's left-out datapoints by why: above a lowered total (a teacher's slots), or
    rows gone from its data file (the teacher ``{task}-data``, which has no slots)."""
    rows = int(per.get(data_teacher(task), 0))
    return [(sum(per.values()) - rows, "above sampling.total in the run's config.yaml"),
            (rows, "whose rows left the task's data file")]


def collect_warnings(
    model: ScoreModel, summary: dict[str, Any], converged: bool, iterations: int, gap: float
) -> list[dict[str, Any]]:
    """Every warning of a summary (students, self_preference and robust fields filled)."""
    out = _preference(summary.get("self_preference", {}), summary.get("judges") or {})
    out += _one_level(model)
    out += _few_datapoints(summary["students"], model.n_items)
    out += _missing(summary["students"], gap)
    out += _not_determined(summary["students"])
    out += _judge_quality(summary.get("judges") or {})
    out += _gold(summary.get("gold"))
    out += _students_alike(summary.get("teachers") or {})
    out += _no_unrelated_judge(summary["students"])
    out += _left_out_by_config(summary.get("data_quality") or {})
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


#: The warnings the console shows first, the kinds that change the answer most at the top,
#: each with the one action that answers it (None: the message ends with its action).
VERDICT_ORDER: dict[str, str | None] = {
    "adaptive_design": None,
    "few_datapoints": "add datapoints (raise sampling.total), then `coeval run --continue`",
    "not_converged": "add datapoints or a judge that tells answers apart, then analyse again",
    "not_determined": "add a judge of another family, or label a few answers (`coeval label --export`)",
    "no_unrelated_judge": None,
    "ranking_vs_gold": "check the judges' rubric and prompts against the gold answers",
    "stale_records": None,
    "contrary_judge": None,
    "missing_data": "read the ranking on common datapoints (`coeval analyze --common-items`)",
    "reference_not_measured": "label answers of more students (`coeval label --export`)",
    "self_preference": "add a judge of another family, which measures the bias",
    "family_preference": "add a judge of another family, which measures the bias",
    "flat_judge": "use a judge that tells answers apart, or label a few answers to check the judges",
    "one_level": "use a judge that tells answers apart, or check the judge's prompt and parsing",
    "judge_vs_gold": "check the judge's prompt against the gold answers",
    "students_alike": "ask the teacher for harder or more varied datapoints",
    "agreement_inflated": None,
    "left_out_by_config": None,
    "degenerate_judge_dropped": None,
}
#: at most this many warnings on the default console
VERDICT_WARNINGS = 3


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _merged(kind: str, group: list[dict[str, Any]]) -> str:
    """One sentence for every warning of ``kind``: per-subject warnings become one line
    naming every subject, so nothing is said once per student."""
    subjects = list(dict.fromkeys(str(w["subject"]) for w in group if w.get("subject")))
    if not all(w.get("subject") for w in group):
        return str(group[0]["message"]) + (f" (and {len(group) - 1} more like it)" if len(group) > 1 else "")
    many = len(subjects) > 1
    if kind == "not_determined":
        return (f"{_and(subjects)} {'are' if many else 'is'} not determined: no unrelated judge that tells answers "
                f"apart graded {'them' if many else 'it'}; {'their places rest' if many else 'its place rests'} on "
                f"judges of {'their' if many else 'its'} own family or on judges that barely tell answers apart")
    if kind in ("self_preference", "family_preference"):
        whose = "their" if many else "its"
        what = f"{whose} own answers" if kind == "self_preference" else f"{whose} family's answers"
        return (f"judge{'s' if many else ''} {_and(subjects)} score{'' if many else 's'} {what} higher than unrelated "
                "judges do")
    if kind in ("flat_judge", "one_level"):
        return (f"judge{'s' if many else ''} {_and(subjects)} barely tell{'' if many else 's'} answers apart: "
                f"{'they count' if many else 'it counts'} for almost nothing in the headline")
    if len(group) == 1:
        return str(group[0]["message"])
    others = subjects[1:]  # none when the warnings share a subject (a model left out in two roles)
    return str(group[0]["message"]) + f" (and {len(group) - 1} more like it" + (f": {_and(others)})" if others else ")")


def verdict_warnings(warnings: list[dict[str, Any]], limit: int = VERDICT_WARNINGS) -> tuple[list[tuple[str, str]], int]:
    """The console's first warnings: at most ``limit`` ``(what, action)`` pairs, one per kind,
    the kinds that change the answer most first (:data:`VERDICT_ORDER`), and how many
    warnings are left for ``-v`` and the report. A kind listed as None carries its action in
    its message, and the action is empty."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for w in warnings:
        groups.setdefault(str(w.get("kind")), []).append(w)
    order = list(VERDICT_ORDER)
    kinds = sorted(groups, key=lambda k: order.index(k) if k in order else len(order))
    if "flat_judge" in groups and "one_level" in groups:  # one judge, one sentence: it barely tells answers apart
        groups["flat_judge"] += groups.pop("one_level")
        kinds.remove("one_level")
    shown = [_with_action(_merged(k, groups[k]), VERDICT_ORDER.get(k)) for k in kinds[:limit]]
    return shown, len(warnings) - sum(len(groups[k]) for k in kinds[:limit])


def _with_action(what: str, action: str | None) -> tuple[str, str]:
    """``(what, action)``; a message that ends with its own action (``...; coeval run
    --continue makes them again``) gives it as the action."""
    if action is not None:
        return what, action
    head, sep, tail = what.rpartition("; ")
    if sep and any(word in tail for word in ("`coeval", "add ", "check ", "set ")):
        return head, tail
    return what, ""
