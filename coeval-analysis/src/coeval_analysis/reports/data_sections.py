"""The HTML report's sections about the data: coverage of the attribute space, reference
scores, data quality and the warnings to read first."""

from __future__ import annotations

import html
from typing import Any

from markupsafe import Markup

from coeval_analysis.reports.blocks import KeyFigures, Section, Table, Text
from coeval_analysis.reports.blocks import fmt as _fmt
from coeval_analysis.reports.figures import COLORS, bar
from coeval_analysis.reports.page import PageContext
from coeval_analysis.reports.quality_labels import quality_rows

__all__ = ["coverage_section", "quality_section", "references_section", "warnings_section"]


def coverage_section(p: PageContext) -> Section | None:
    s, t, fig = p.summary, p.tables, p.fig
    cov = s["coverage"]
    cnames = list(cov)
    cblocks: list[Any] = []
    if cnames:
        cblocks.append(
            fig(
                "fig-coverage",
                bar(
                    cnames,
                    [cov[c]["value_coverage"] for c in cnames],
                    "Attribute values covered",
                    axis="share of values with a datapoint",
                    color=COLORS[5],
                    max_value=1.0,
                ),
                80 + 40 * len(cnames),
            )
        )
        cblocks.append(
            Table(
                [
                    ("task", "task"),
                    ("n_datapoints", "datapoints"),
                    ("n_values", "grid values"),
                    ("value_coverage", "value coverage"),
                    ("pair_coverage", "pair coverage"),
                    ("uncovered", "never drawn"),
                ],
                [{"task": k, **v, "uncovered": ", ".join(v["uncovered"]) or "—"} for k, v in cov.items()],
            )
        )
        ct = t.get("coverage")
        if ct is not None and len(ct):
            cblocks.append(
                Table(
                    [
                        ("task", "task"),
                        ("teacher", "teacher"),
                        ("attribute", "attribute"),
                        ("value", "value"),
                        ("n_datapoints", "datapoints"),
                    ],
                    ct.to_dict("records"),
                )
            )
    return (
        Section(
            "coverage",
            "Coverage of the attribute grid",
            "Which target-attribute values the teachers' datapoints exercise.",
            [b for b in cblocks if b] or [Text(Markup("<p>No target attributes recorded.</p>"))],
        )
    )


def references_section(p: PageContext) -> Section | None:
    s, t = p.summary, p.tables
    rblocks: list[Any] = []
    gold = s.get("gold")
    if gold:
        ens = gold.get("ensemble_vs_gold") or {}
        rblocks.append(
            KeyFigures(
                [
                    ("ensemble vs gold: Pearson", _fmt(ens.get("pearson"))),
                    ("Spearman", _fmt(ens.get("spearman"))),
                    ("plain mean vs gold: Pearson", _fmt((gold.get("plain_vs_gold") or {}).get("pearson"))),
                    ("responses", _fmt(ens.get("n"))),
                    ("ranking vs gold: Spearman", _fmt((gold.get("ranking_vs_gold") or {}).get("spearman"))),
                ]
            )
        )
        rblocks.append(
            Table(
                [
                    ("judge", "judge"),
                    ("pearson", "Pearson r with gold"),
                    ("spearman", "Spearman ρ"),
                    ("n", "responses"),
                ],
                [{"judge": k, **(v or {})} for k, v in gold["judges_vs_gold"].items()],
            )
        )
    ev = t.get("evaluator_scores")
    if ev is not None and len(ev):
        rblocks.append(
            Table(
                [
                    ("evaluator", "evaluator"),
                    ("factor", "factor"),
                    ("student", "student"),
                    ("score", "score"),
                    ("n", "responses"),
                ],
                ev.to_dict("records"),
            )
        )
    lt = t.get("labels")
    if lt is not None and len(lt):
        rblocks.append(
            Table(
                [
                    ("task", "task"),
                    ("attribute", "attribute"),
                    ("label", "label"),
                    ("support", "support"),
                    ("precision", "precision"),
                    ("recall", "recall"),
                    ("f1", "F1"),
                ],
                lt.to_dict("records"),
            )
        )
    if rblocks:
        return (
            Section(
                "references",
                "Gold, metrics and labels",
                "Scores against references: benchmark gold verdicts (kept apart from the judge score), "
                "metric factors and label exact-match with per-label precision, recall and F1. "
                "Ensemble vs gold: the correlation, per response, between the judge-weighted score and the "
                "gold verdict (plain mean: the same for the unweighted mean of the judges); each judge's own "
                "correlation is in the table. Ranking vs gold: Spearman's ρ between the headline ranking and "
                "the gold ranking of the students. Each student's gold score is in the ranking table.",
                rblocks,
            )
        )
    return None


def quality_section(p: PageContext) -> Section | None:
    qrows = quality_rows(p.summary["data_quality"])
    return (
        Section(
            "quality",
            "Data quality",
            "Every record the statistics do not use, and why. Duplicates: the last valid record of an id "
            "wins. Failed records count as judge failures, never as Low.",
            [Table([("what", "what"), ("count", "count")], qrows)],
        )
    )


def warnings_section(p: PageContext) -> Section | None:
    warnings = p.summary.get("warnings") or []
    notes = p.summary.get("headline_notes") or []
    if not warnings and not notes:
        return None
    items = "".join(f"<li>{html.escape(w['message'])}</li>" for w in warnings)
    blocks = [Text(Markup(f"<ul class=\"warnings\">{items}</ul>"))] if warnings else []
    if notes:
        listed = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
        blocks.append(Text(Markup(f"<p>Notes on the headline:</p><ul class=\"headline-notes\">{listed}</ul>")))
    return Section(
        "warnings",
        "Warnings",
        "Every finding that changes how far to trust the ranking (the Leaderboard shows the first ones, "
        "with their actions), then notes on how the headline differs from the plain mean.",
        blocks,
    )
