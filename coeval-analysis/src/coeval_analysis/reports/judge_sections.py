"""The HTML report's sections about the judges and teachers: how judges score and agree,
what teachers produced, and the bias checks."""

from __future__ import annotations

import html
from typing import Any

from markupsafe import Markup

from coeval_analysis.reports.blocks import KeyFigures, Section, Table, Text
from coeval_analysis.reports.blocks import fmt as _fmt
from coeval_analysis.reports.figures import COLORS, bar, histogram, matrix_figure, verbosity_figure
from coeval_analysis.reports.page import PageContext

__all__ = ["agreement_section", "bias_section", "judges_section", "teachers_section"]


def judges_section(p: PageContext) -> Section | None:
    s, pct, fig = p.summary, p.pct, p.fig
    judges = s["judges"]
    llm = [j for j in judges if "weight" in judges[j]]
    jblocks: list[Any] = []
    if llm:
        jblocks.append(
            fig(
                "fig-weights",
                bar(
                    llm,
                    [judges[j]["weight"] for j in llm],
                    f"Judge weights ({pct} interval)",
                    [judges[j]["weight_ci"] for j in llm],
                    "weight",
                    max_value=1.0,
                ),
                80 + 40 * len(llm),
            )
        )
    names = list(judges) + list(s.get("evaluator_records", {}))
    everyone = {**judges, **s.get("evaluator_records", {})}
    jblocks.append(
        fig(
            "fig-failures",
            bar(
                names,
                [everyone[j]["failure_rate"] for j in names],
                "Failure rate",
                axis="share of records failed",
                color=COLORS[3],
                max_value=1.0,
            ),
            80 + 40 * len(names),
        )
    )
    jrows = [
        {"judge": k, **v, "errors": ", ".join(f"{a}: {b}" for a, b in v.get("errors", {}).items())}
        for k, v in everyone.items()
    ]
    jblocks.append(
        Table(
            [
                ("judge", "judge"),
                ("evaluator", "kind"),
                ("weight", "weight"),
                ("weight_ci", f"{pct} CI"),
                ("family", "family"),
                ("leniency", "leniency"),
                ("n_conflicted", "conflicted"),
                ("unadjusted_weight", "agreement-only weight"),
                ("consensus_r", "r with others"),
                ("mean_score", "mean score given"),
                ("mean_kappa", "mean κ"),
                ("n_records", "records"),
                ("n_failed", "failed"),
                ("failure_rate", "failure rate"),
                ("errors", "errors"),
            ],
            jrows,
        )
    )
    return (
        Section(
            "judges",
            "Judges",
            "Weight: the judge's share of the judged information in the headline (how strongly its scores "
            "follow answer quality, measured on answers other judges also grade, over its noise); a judge "
            "answering at random gets about 0. Leniency: how much higher than the others it scores "
            "(subtracted). Conflicted: its grades of its own or its family's answers, kept with its family "
            "bias estimated against unrelated judges that tell answers apart, or bounded by a prior where "
            "there are none. Agreement-only weight: a diagnostic weighting by agreement alone, not the "
            "headline's. Failed records (unparseable replies, errors) are counted here, never scored as Low.",
            [b for b in jblocks if b],
        )
    )


def agreement_section(p: PageContext) -> Section | None:
    s, fig = p.summary, p.fig
    ag = s["agreement"]
    ablocks: list[Any] = []
    icc_ = ag.get("icc", {})
    ablocks.append(
        KeyFigures(
            [
                ("Krippendorff's α (ordinal)", _fmt(ag.get("krippendorff_alpha"))),
                ("ICC(3,1)", _fmt(icc_.get("icc3_1"))),
                ("ICC(3,k)", _fmt(icc_.get("icc3_k"))),
                ("ICC(2,1)", _fmt(icc_.get("icc2_1"))),
                ("ICC items", _fmt(icc_.get("n_items"))),
            ]
        )
    )
    if ag["pairwise"]:
        ablocks.append(
            fig(
                "fig-kappa",
                matrix_figure(ag["judges"], ag["pairwise"], "kappa", "Cohen's κ by pair"),
                max(280, 140 + 40 * len(ag["judges"])),
            )
        )
        ablocks.append(
            Table(
                [
                    ("a", "judge A"),
                    ("b", "judge B"),
                    ("n", "common items"),
                    ("spa", "agreement"),
                    ("wpa", "weighted agreement"),
                    ("kappa", "κ"),
                    ("kappa_linear", "linear-weighted κ"),
                    ("strength", "strength"),
                ],
                ag["pairwise"],
            )
        )
    if ag.get("by_task"):
        ablocks.append(
            Table(
                [("task", "task"), ("krippendorff_alpha", "α (ordinal)"), ("n_units", "items")],
                [{"task": k, **v} for k, v in ag["by_task"].items()],
            )
        )
    note = ""
    if icc_.get("excluded"):
        note = f" ICC uses the items every judge in it scored; left out for low coverage: {', '.join(icc_['excluded'])}."
    if ag.get("note"):
        note += f" {ag['note'][0].upper()}{ag['note'][1:]}."
    note += (
        " — marks a statistic that is undefined on these items (fewer than two judges on them, or"
        " no variation in the levels given: κ when both judges used one level only)."
    )
    return (
        Section(
            "agreement",
            "Judge agreement",
            "Items are (response, rubric factor) pairs scored High/Medium/Low. Pairwise statistics use "
            "the items both judges scored; α uses every item at least two judges scored." + note,
            [b for b in ablocks if b],
        )
    )


def teachers_section(p: PageContext) -> Section | None:
    s, t, fig = p.summary, p.tables, p.fig
    teachers = s["teachers"]
    tnames = list(teachers)
    tblocks: list[Any] = [
        fig(
            "fig-teachers",
            bar(
                tnames,
                [teachers[x]["discrimination"] for x in tnames],
                "Teacher discrimination",
                axis="mean per-datapoint spread of student scores",
                color=COLORS[2],
            ),
            80 + 40 * len(tnames),
        ),
        Table(
            [
                ("teacher", "teacher"),
                ("discrimination", "discrimination"),
                ("separation", "separation"),
                ("ranking_agreement", "ranking agreement (τ)"),
                ("item_weight", "mean datapoint weight"),
                ("mean_score", "mean score"),
                ("n_datapoints", "datapoints"),
            ],
            [{"teacher": k, **v} for k, v in teachers.items()],
        ),
    ]
    dps = t.get("datapoints")
    if dps is not None and len(dps):
        tblocks.append(
            fig(
                "fig-items",
                histogram(
                    dps["item_weight"].to_numpy(), "Datapoint weights in the headline", "item weight"
                ),
                300,
            )
        )
    return (
        Section(
            "teachers",
            "Teachers",
            "Discrimination: how far apart students score on a teacher's datapoints (the mean, over its "
            "datapoints, of the standard deviation of the students' scores). Separation: the standard "
            "deviation of the students' mean scores on its datapoints. Ranking agreement: Kendall's τ "
            "between the ranking its datapoints give and the one the other teachers' give. Mean score: how "
            "easy its datapoints are. Datapoint weights: the weight each datapoint gets in the headline, "
            "from how well it separates students (its item-total correlation, blended with its teacher's "
            "mean; at least 0.05).",
            [b for b in tblocks if b],
        )
    )


_BIAS_CHECKS = {
    "judge_is_student": "judge scores itself",
    "same_family": "judge scores its family",
    "teacher_is_student": "student on its own datapoints",
}


def _not_measured(unmeasured: dict[str, dict[str, int]]) -> Text | None:
    """Models that play two roles but have nothing to be compared with (every judge of
    their answers is of their family): named, rather than shown as rows of zeros."""
    parts = [
        f"{html.escape(_BIAS_CHECKS.get(check, check))}: "
        + ", ".join(f"{html.escape(m)} ({n} without a reference)" for m, n in models.items())
        for check, models in unmeasured.items()
        if models
    ]
    if not parts:
        return None
    return Text(Markup(
        "<p>Not measured, for want of a judge of another family to compare with (or, for "
        f"teachers, of other students' leads): {'; '.join(parts)}.</p>"
    ))


def bias_section(p: PageContext) -> Section | None:
    s, t, fig = p.summary, p.tables, p.fig
    sp = s["self_preference"]
    brows2 = []
    for kind, label in _BIAS_CHECKS.items():
        for model_name, v in sp.get(kind, {}).items():
            brows2.append({"check": label, "model": model_name, **v})
    vb = s["verbosity"]
    vrows = [{"judge": "weighted consensus", **(vb["ensemble"] or {})}] + [
        {"judge": k, **(v or {})} for k, v in vb["judges"].items()
    ]
    bblocks: list[Any] = [
        Table(
            [
                ("check", "check"),
                ("model", "model"),
                ("family", "family"),
                ("bias", "bias"),
                ("se", "std. error"),
                ("n_self", "n own"),
                ("n_other", "n other"),
            ],
            brows2,
        )
        if brows2
        else Text(Markup("<p>No self-preference to measure.</p>")),
        _not_measured(sp.get("not_measured") or {}),
        Table(
            [
                ("judge", "judge"),
                ("spearman", "Spearman ρ (length, score)"),
                ("within_item", "within datapoint r"),
                ("n", "responses"),
            ],
            vrows,
        ),
        fig("fig-verbosity", verbosity_figure(t.get("responses")), 420),
    ]
    return (
        Section(
            "bias",
            "Self-preference and verbosity",
            "Bias: how much more a judge scores its own (or its family's) answers than the other judges "
            "do, minus how much more it scores everyone else's; for teachers, a student's lead on its "
            "own datapoints minus its lead elsewhere; positive means self-preference. — where there is no "
            "unrelated judge or student to compare with (e.g. every model of one family). Verbosity: "
            "Spearman's ρ of answer length with score; within datapoint: the correlation after removing each "
            "datapoint's mean length and score (longer answers to the same prompt scoring higher).",
            [b for b in bblocks if b],
        )
    )
