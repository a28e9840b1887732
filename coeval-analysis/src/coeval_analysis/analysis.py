"""Run every statistic over a loaded run and collect a JSON-ready summary plus tables.

:func:`analyze` is what ``coeval analyze`` calls; report writers (HTML, summary.json,
CSV/Parquet) read the :class:`Analysis` it returns and never recompute anything, so every
number a report shows is in ``summary.json`` or a table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from coeval_analysis.items.rejected_replies import with_rejections
from coeval_analysis.items.tables import datapoint_table, label_table, response_table
from coeval_analysis.items.teacher_diversity import with_diversity
from coeval_analysis.labels.human_labels import HumanLabel, run_labels
from coeval_analysis.labels.reference_judge import REFERENCE_NOT_MEASURED, reference_summary, reference_table
from coeval_analysis.leaderboard.build import leaderboard_of
from coeval_analysis.loading.run_data import RunData
from coeval_analysis.ranking.headline import (
    MIN_INTERVAL_DATAPOINTS,
    MISSING_GAP,
    HeadlineRanking,
    all_students,
    common_items,
    determination,
    headline_ranking,
    rank_label,
    reference_in_headline,
    student_missing,
    teacher_weights,
    unrelated_weight,
)
from coeval_analysis.ranking.judge_entries import judge_entries, record_facts
from coeval_analysis.ranking.pass_rates import pass_rate_summary, pass_rate_table
from coeval_analysis.stats.agreement import icc, krippendorff_alpha, landis_koch, pairwise_agreement
from coeval_analysis.stats.bootstrap import Bootstrap
from coeval_analysis.stats.coverage import attribute_coverage
from coeval_analysis.stats.diagnostic_ranking import DiagnosticRanking, diagnostic_ranking
from coeval_analysis.stats.diagnostics import self_preference, teacher_discrimination, verbosity
from coeval_analysis.stats.icc_bootstrap import icc_intervals
from coeval_analysis.stats.measurement import TAU
from coeval_analysis.stats.numbers import finite_or_none
from coeval_analysis.stats.reference import evaluator_scores, gold_report, label_report
from coeval_analysis.stats.scores import ScoreModel
from coeval_analysis.warnings.headline_notes import headline_notes
from coeval_analysis.warnings.judge_quality import (
    degenerate_rates,
    drop_judges,
    dropped_entries,
    with_degenerate_rates,
)
from coeval_analysis.warnings.judge_replies import judge_replies
from coeval_analysis.warnings.run_warnings import collect_warnings, flag_constant_raters
from coeval_analysis.warnings.stale import stale_warnings

__all__ = ["SCHEMA_VERSION", "Analysis", "AnalysisOptions", "analyze"]

SCHEMA_VERSION = 3  #: 3: headline_* and leaderboard; robust_* (the same numbers) kept for one release


@dataclass
class AnalysisOptions:
    n_boot: int = 1000
    seed: int = 0
    level: float = 0.95
    #: ICC needs items every judge in it scored: judges with fewer units than this share of
    #: the busiest judge's are left out of ICC (and listed in ``icc.excluded``)
    icc_min_coverage: float = 0.5
    #: always add the ranking on the datapoints every student answered (it is added anyway
    #: when students' missing-answer rates differ by more than ``MISSING_GAP``)
    common_items: bool = False
    #: leave judges whose replies are mostly degenerate out of the ranking (see judge_quality)
    drop_degenerate_judges: bool = False


@dataclass
class Analysis:
    data: RunData
    options: AnalysisOptions
    summary: dict[str, Any]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)


def _unfinished(meta: dict[str, Any]) -> str | None:
    """Why the run's numbers may be partial (meta.json says it did not finish), or None."""
    status = meta.get("status")
    phases = meta.get("phases_completed")
    if isinstance(status, str) and status != "completed":
        why = f"its status in meta.json is '{status}'"
    elif isinstance(phases, list) and phases and "evaluation" not in phases:
        why = "the evaluation phase is not among its completed phases in meta.json"
    else:
        return None
    return f"This run did not complete ({why}): the numbers cover only the records it has written."


def _ranks(values: np.ndarray) -> np.ndarray:
    """Competition ranks (1 = highest; ties share the best rank; NaN ranks last)."""
    v = np.where(np.isnan(values), -np.inf, values)
    return np.array([1 + int((v > x).sum()) for x in v], np.int64)


def analyze(
    data: RunData,
    options: AnalysisOptions | None = None,
    progress: Callable[[str], None] | None = None,
    human_labels: Sequence[HumanLabel] | None = None,
    reference: pd.DataFrame | None = None,
) -> Analysis:
    """Every statistic of ``data``. ``human_labels``: human labels of its answers (None: the run
    folder's ``human_labels.jsonl``, if any; ``[]``: none), checked against today's answers
    so that a label of a regenerated answer is reported stale and not used.

    ``reference``: scores of a judge of known scale, columns ``datapoint_id, student, factor,
    score`` in [0, 1] and ``source`` ("human" or "gold"); the headline treats it as a judge of
    scale 1, location 0 and no family (see :func:`coeval_analysis.ranking.headline.reference_of`).
    None: made from ``human_labels`` and the run's gold answers."""
    opts = options or AnalysisOptions()
    step = progress or (lambda _msg: None)
    human = run_labels(data.path, human_labels)
    #: the reference judge (human labels and gold) of the measurement model
    if reference is None:
        reference = reference_table(data, human)
    replies = judge_replies(data)
    rates = degenerate_rates(data.units, replies)
    records_before = data.records
    data, dropped = drop_judges(data, rates) if opts.drop_degenerate_judges else (data, [])
    step("scores")
    model = ScoreModel.build(data)
    boot = Bootstrap(model.n_items, opts.n_boot, opts.seed)
    # below MIN_INTERVAL_DATAPOINTS a bootstrap interval means nothing: none is shown
    few = model.n_items < MIN_INTERVAL_DATAPOINTS
    slices = model.student_table(Bootstrap(model.n_items, 0, opts.seed) if few else boot, opts.level)
    step("robust ranking")
    robust = diagnostic_ranking(model, boot, opts.level)
    headline = headline_ranking(model, data, boot, opts.level, reference)
    step("judge agreement")
    agreement, pairs = _agreement(model, opts, boot)
    step("teachers and diagnostics")
    teachers = teacher_discrimination(model, robust)
    for name, weight in teacher_weights(headline, list(model.teachers)).items():
        if name in teachers:
            teachers[name]["item_weight"] = weight
    bias = self_preference(model, robust, headline.families)
    verb = verbosity(model, robust)
    coverage, coverage_table = attribute_coverage(data)
    gold = gold_report(model, robust, boot, opts.level)
    labels = label_report(data.labels, data.target_attributes)
    ev_scores = evaluator_scores(model)
    checks = pass_rate_table(data, opts.level)
    judges, evaluator_records, judge_table = judge_entries(data, model, robust, pairs, headline)
    missing = student_missing(data, model, all_students(data, model))
    students, student_table = _students(model, slices, robust, gold, headline, missing)

    q = data.quality
    summary: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "experiment_id": data.experiment_id,
        "run": str(data.path),
        "generated_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "settings": {"n_boot": opts.n_boot, "seed": opts.seed, "level": opts.level},
        "run_status": data.meta.get("status") if isinstance(data.meta.get("status"), str) else None,
        "run_warning": _unfinished(data.meta),
        "n_records": q.n_records,
        "n_failed": q.n_failed,
        "n_duplicates": q.n_duplicates,
        "n_items": model.n_items,
        "n_responses_scored": len(model.scored_responses()),
        "data_quality": q.as_dict(),
        "students": students,
        "judges": with_degenerate_rates(judges, rates),
        "evaluator_records": evaluator_records,
        "agreement": agreement,
        "teachers": with_diversity(with_rejections(teachers, data.meta), data),
        "self_preference": bias,
        "verbosity": verb,
        "coverage": coverage,
        "gold": gold,
        "labels": labels,
        "evaluators": _evaluator_summary(ev_scores),
        "checks": pass_rate_summary(checks),
        "breakdowns": _breakdowns(slices),
        "headline": _headline_summary(headline),
        "robust": _headline_summary(headline),  # schema 2's name, for one release
        "comparisons": headline.comparisons.pairs,
    }
    summary["common_items"] = _common_items(missing, headline, model, opts)
    summary["warnings"] = collect_warnings(
        model, summary, headline.headline.converged, headline.headline.iterations, MISSING_GAP
    )
    _add_reference(summary, reference_summary(data, model, human, headline.comparisons.pairs, boot, opts.level,
                                              in_headline=reference_in_headline(headline)))  # fmt: skip
    summary["warnings"] = stale_warnings(data) + summary["warnings"]  # first: they change every number
    if isinstance(data.meta.get("adaptive"), dict):  # an adaptive run: what its design did not buy, and why
        from coeval_analysis.adaptive.run_record import with_adaptive
        with_adaptive(summary, data.meta)
    if isinstance(summary["judges"], dict):
        flag_constant_raters(summary)
    summary["headline_notes"] = headline_notes(summary)
    summary["headline_evidence"] = _evidence(headline, list(model.students), checks)
    summary["leaderboard"] = leaderboard_of(summary, opts.level, headline.measurement.intervals)
    if dropped:
        _add_dropped(summary, dropped_entries(dropped, rates, record_facts(records_before)))
    tables = {
        "students": student_table,
        "student_scores": slices,
        "judges": judge_table,
        "judge_pairs": pd.DataFrame(pairs),
        "teachers": pd.DataFrame([{"teacher": t, **v} for t, v in teachers.items()]),
        "coverage": coverage_table,
        "datapoints": datapoint_table(model, robust, headline),
        "responses": response_table(model, robust),
        "evaluator_scores": ev_scores,
        "checks": checks,
        "labels": label_table(labels),
    }
    if len(reference):
        tables["reference"] = reference
    return Analysis(data=data, options=opts, summary=summary, tables=tables)


# ------------------------------------------------------------------------------------------


def _common_items(missing: dict[str, Any], headline: HeadlineRanking, model: ScoreModel,
                  opts: AnalysisOptions) -> dict[str, Any] | None:
    """The ranking on the datapoints every student answered: asked for, or when the
    students' missing answers differ by more than ``MISSING_GAP``."""
    gaps = [v["missing_rate"] for v in missing.values() if v["missing_rate"] is not None]
    uneven = len(gaps) >= 2 and max(gaps) - min(gaps) > MISSING_GAP
    return common_items(headline, list(model.students)) if uneven or opts.common_items else None


def _add_dropped(summary: dict[str, Any], dropped: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    """The judges ``--drop-degenerate-judges`` left out: their entries and warnings."""
    gone_judges, gone_warnings = dropped
    if isinstance(summary["judges"], dict):
        summary["judges"].update(gone_judges)
    summary["warnings"] += gone_warnings


def _evidence(headline: HeadlineRanking, students: list[str], checks: pd.DataFrame) -> dict[str, Any]:
    """The leaderboard's evidence columns and how the headline was combined: the headline's
    parts, then pass@k of code tasks with several samples (shown beside: pass@1 counts)."""
    cols = []
    for e in headline.evidence:
        per = {s: {"score": finite_or_none(e.score[i]), "ci": [finite_or_none(e.low[i]), finite_or_none(e.high[i])], "n": int(e.n[i])}
               for i, s in enumerate(students) if np.isfinite(e.score[i])}  # fmt: skip
        cols.append({"key": e.key, "kind": e.kind, "title": e.title, "in_headline": e.in_headline, "students": per})
    at_k = checks[checks["factor"].astype(str).str.match(r"pass@\d+$") & (checks["factor"] != "pass@1")] if len(
        checks) else checks
    for key, rows in at_k.groupby("factor", sort=True) if len(at_k) else ():
        if rows["task"].nunique() > 1:  # one task's k: a column per k would mix tasks; shown per task in checks
            continue
        per = {str(r.student): {"score": finite_or_none(r.pass_rate), "ci": [finite_or_none(r.ci_low), finite_or_none(r.ci_high)], "n": int(r.n)}
               for r in rows.itertuples(index=False)}  # fmt: skip
        cols.append({"key": str(key), "kind": "pass@k", "title": str(key), "in_headline": False, "students": per})
    return {"columns": cols, "combined": headline.combined}


def _add_reference(summary: dict[str, Any], ref_summary: dict[str, Any] | None) -> None:
    """``summary["reference"]`` (labels and gold), and a warning when the fit could not
    check them: they then move nothing, and a user who labelled must not think otherwise."""
    if ref_summary is None:
        return
    summary["reference"] = ref_summary
    if ref_summary["in_headline"] is False:
        summary["warnings"].append({"kind": "reference_not_measured", "subject": None,
                                    "message": REFERENCE_NOT_MEASURED})


def _no_icc() -> dict[str, Any]:
    """The ICC fields when ICC cannot be computed: same keys, null values."""
    return {
        "icc3_1": None,
        "icc3_k": None,
        "icc2_1": None,
        "icc3_1_ci": [None, None],
        "icc3_k_ci": [None, None],
        "icc2_1_ci": [None, None],
        "n_items": 0,
        "judges": [],
        "excluded": [],
    }


def _agreement(
    model: ScoreModel, opts: AnalysisOptions, boot: Bootstrap
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    J = len(model.judges)
    F = max(len(model.factors), 1)
    cat = model.u_level >= 0
    key = model.u_resp[cat] * F + model.u_factor[cat]
    out: dict[str, Any] = {
        "judges": list(model.judges),
        "unit": "(response, rubric factor) scored High/Medium/Low",
        "pairwise": [],
        "krippendorff_alpha": None,
        "krippendorff_alpha_nominal": None,
        "icc": _no_icc(),
        "by_task": {},
    }
    if J < 2 or len(key) == 0:
        out["note"] = "judge agreement needs at least two LLM judges scoring the same items"
        return out, []
    uniq, row = np.unique(key, return_inverse=True)
    levels = np.full((len(uniq), J), -1, np.int8)
    levels[row, model.u_judge[cat]] = model.u_level[cat]
    pairs = pairwise_agreement(levels, model.judges)
    for p in pairs:
        p["strength"] = landis_koch(p["kappa"])
    out["pairwise"] = pairs
    values = np.where(levels >= 0, levels.astype(np.float64), np.nan)
    out["krippendorff_alpha"] = finite_or_none(krippendorff_alpha(values, "ordinal"))
    out["krippendorff_alpha_nominal"] = finite_or_none(krippendorff_alpha(values, "nominal"))
    # per task alpha
    unit_task = model.item_task[model.resp_item[uniq // F]]
    for t in np.unique(unit_task):
        if t < 0:
            continue
        sel = unit_task == t
        out["by_task"][model.tasks[t]] = {
            "krippendorff_alpha": finite_or_none(krippendorff_alpha(values[sel], "ordinal")),
            "n_units": int(sel.sum()),
        }
    # ICC on items scored by every judge in the set
    counts = (levels >= 0).sum(0)
    chosen = [j for j in range(J) if counts[j] >= opts.icc_min_coverage * counts.max()]
    while len(chosen) >= 2:
        complete = (levels[:, chosen] >= 0).all(1)
        if complete.sum() >= 10 or len(chosen) == 2:
            break
        chosen.remove(min(chosen, key=lambda j: counts[j]))
    res: dict[str, Any] = _no_icc()
    if len(chosen) >= 2:
        complete = (levels[:, chosen] >= 0).all(1)
        mat = levels[complete][:, chosen].astype(np.float64) / 2.0
        r = icc(mat, opts.level)
        unit_item = model.resp_item[uniq[complete] // F]
        if boot.n_boot and (unit_item >= 0).all():  # a datapoint's units move together
            r.update(icc_intervals(mat, unit_item, boot, opts.level))
        res = {
            "icc3_1": finite_or_none(r["icc3_1"]),
            "icc3_k": finite_or_none(r["icc3_k"]),
            "icc2_1": finite_or_none(r["icc2_1"]),
            "icc3_1_ci": [finite_or_none(x) for x in r["icc3_1_ci"]],
            "icc3_k_ci": [finite_or_none(x) for x in r["icc3_k_ci"]],
            "icc2_1_ci": [finite_or_none(x) for x in r["icc2_1_ci"]],
            "n_items": int(r["n_items"]),
        }
    res["judges"] = [model.judges[j] for j in chosen] if len(chosen) >= 2 else []
    res["excluded"] = [model.judges[j] for j in range(J) if j not in chosen or len(chosen) < 2]
    out["icc"] = res
    return out, pairs


def _students(
    model: ScoreModel,
    slices: pd.DataFrame,
    robust: DiagnosticRanking,
    gold: dict[str, Any] | None,
    headline: HeadlineRanking,
    missing: dict[str, dict[str, Any]],
) -> tuple[dict[str, Any], pd.DataFrame]:
    """Per student: the headline as ``headline_*``, the plain mean as ``score``, the
    diagnostic agreement-weighted score as ``diagnostic_*``, rank ranges and missing data.
    Students without any score are listed last, unranked. The keys before schema 3
    (``robust_*`` for the headline, ``robust_unadjusted_*`` for the diagnostic score) are
    written too, for one release."""
    overall = slices[slices["kind"] == "overall"].set_index("student")
    score = np.array(
        [overall.loc[s, "score"] if s in overall.index else np.nan for s in model.students], float
    )
    rank = _ranks(score)
    h = headline.headline
    rrank = _ranks(h.score)
    urank = _ranks(robust.score)
    comp = headline.comparisons
    n_items = _evidence_items(headline, model)
    unrelated = unrelated_weight(headline)
    why_not = determination(headline)
    out: dict[str, Any] = {}
    rows = []
    for i, s in enumerate(model.students):
        row = overall.loc[s] if s in overall.index else None
        scored = bool(np.isfinite(h.score[i]))
        rr = comp.rank_range[i]
        entry: dict[str, Any] = {
            "score": finite_or_none(score[i]),
            "ci": [finite_or_none(row["ci_low"]), finite_or_none(row["ci_high"])] if row is not None else [None, None],
            "rank": int(rank[i]),
            "headline_score": finite_or_none(h.score[i]),
            "headline_ci": [finite_or_none(headline.ci[0][i]), finite_or_none(headline.ci[1][i])],
            "headline_rank": int(rrank[i]) if scored else None,
            "judged_score": finite_or_none(headline.judged[i]),
            "rank_range": list(rr) if rr else None,
            "rank_label": rank_label(rr) if rr or not scored else str(rrank[i]),
            "rank_ci": list(rci) if (rci := comp.rank_ci[i]) else None,
            "diagnostic_score": finite_or_none(robust.score[i]),
            "diagnostic_ci": [finite_or_none(robust.ci[0][i]), finite_or_none(robust.ci[1][i])],
            "diagnostic_rank": int(urank[i]),
            "n_responses": int(row["n"]) if row is not None else 0,
            "n_items": int(n_items[i]),
            "unrelated_judge_weight": finite_or_none(unrelated[i]),
            "determined": why_not[i] is None if scored else None,
            "not_determined": why_not[i],
            **missing.get(s, {}),
        }
        if gold and s in gold["students"]:
            entry["gold_score"] = gold["students"][s]["gold_score"]
            entry["gold_ci"] = gold["students"][s]["gold_ci"]
        out[s] = _with_old_keys(entry)
    for s, m in missing.items():
        if s not in out:  # every answer failed or went unjudged: listed, never scored
            out[s] = _with_old_keys({"score": None, "ci": [None, None], "rank": None, "headline_score": None,
                                     "headline_ci": [None, None], "headline_rank": None, "judged_score": None,
                                     "rank_range": None, "rank_label": rank_label(None), "rank_ci": None,
                                     "diagnostic_score": None, "diagnostic_ci": [None, None],
                                     "diagnostic_rank": None, "n_responses": 0, "n_items": 0, **m})  # fmt: skip
    for s, entry in out.items():
        flat: dict[str, Any] = {"student": s, **{k: v for k, v in entry.items()
                                                 if not isinstance(v, list) and k not in OLD_STUDENT_KEYS}}  # fmt: skip
        for k in ("ci", "headline_ci", "diagnostic_ci", "gold_ci", "rank_range", "rank_ci"):
            bounds = entry.get(k)
            if isinstance(bounds, list):
                flat[f"{k}_low"], flat[f"{k}_high"] = bounds
        rows.append(flat)
    last = len(out) + 1
    ordered = dict(sorted(out.items(), key=lambda kv: (kv[1]["headline_rank"] or last, kv[0])))
    table = pd.DataFrame(rows)
    if len(table):
        table["_order"] = table["headline_rank"].fillna(last)
        table = table.sort_values(["_order", "student"]).drop(columns="_order").reset_index(drop=True)
    return ordered, table


#: summary.json keys of schema 2, written beside their schema-3 names for one release
OLD_STUDENT_KEYS = {
    "robust_score": "headline_score",
    "robust_ci": "headline_ci",
    "robust_rank": "headline_rank",
    "robust_unadjusted_score": "diagnostic_score",
    "robust_unadjusted_ci": "diagnostic_ci",
    "robust_unadjusted_rank": "diagnostic_rank",
}


def _with_old_keys(entry: dict[str, Any]) -> dict[str, Any]:
    for old, new in OLD_STUDENT_KEYS.items():
        entry[old] = entry[new]
    return entry


def _evidence_items(headline: HeadlineRanking, model: ScoreModel) -> np.ndarray:
    """Per student: the datapoints with evidence behind its headline (judged or a counted rate)."""
    h = headline.headline
    has = ~np.isnan(h.cell) if h.cell.size else np.zeros((model.n_items, model.n_students), bool)
    out: np.ndarray = has.sum(0)
    for e in headline.evidence:
        if e.in_headline and e.kind != "judged":
            out = np.maximum(out, e.n)
    return out


def _headline_summary(r: HeadlineRanking) -> dict[str, Any]:
    """How the headline was made (``summary.json`` ``headline``; ``robust`` until schema 3)."""
    h = r.headline
    return {
        "method": "measurement-model",
        "combined": r.combined,
        "bias_prior_sd": TAU,
        "n_refits": r.measurement.replicates.n_refits if r.measurement.replicates else 0,
        "judges_resampled": bool(r.measurement.replicates.judges_resampled) if r.measurement.replicates else False,
        "n_datapoints": r.measurement.n_items,
        "intervals": r.measurement.intervals,
        "reference_judge": r.measurement.layout.has_reference,
        "converged": bool(h.converged),
        "iterations": int(h.iterations),
        "scorers": list(r.judges),
        "families": dict(sorted(r.families.items())),
        "n_conflicted": int(h.n_conflicted.sum()),
        "judge_weights": {j: finite_or_none(h.judge_weight[k]) for k, j in enumerate(r.judges)},
        "judge_leniency": {j: finite_or_none(h.judge_leniency[k]) for k, j in enumerate(r.judges)},
    }


def _breakdowns(slices: pd.DataFrame) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for kind, g in slices[slices["kind"] != "overall"].groupby("kind", sort=False):
        out[str(kind)] = [
            {
                "slice": r.slice,
                "task": r.task or None,
                "student": r.student,
                "score": finite_or_none(r.score),
                "ci": [finite_or_none(r.ci_low), finite_or_none(r.ci_high)],
                "n": int(r.n),
            }
            for r in g.itertuples(index=False)
        ]
    return out


def _evaluator_summary(ev: pd.DataFrame) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for r in ev.itertuples(index=False):
        out.setdefault(str(r.evaluator), {}).setdefault(str(r.factor), {})[str(r.student)] = {
            "score": finite_or_none(r.score),
            "n": int(r.n),
        }
    return out
