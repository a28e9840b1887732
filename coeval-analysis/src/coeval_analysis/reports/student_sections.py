"""The HTML report's sections about the students: overview, ranking, pairwise comparisons,
missing answers and breakdowns by attribute."""

from __future__ import annotations

import html
from typing import Any

from markupsafe import Markup

from coeval_analysis.reports.blocks import KeyFigures, Section, Table, Text
from coeval_analysis.reports.blocks import fmt as _fmt
from coeval_analysis.reports.figures import comparison_matrix, heatmap, leaderboard_figure
from coeval_analysis.reports.page import PageContext
from coeval_analysis.warnings.run_warnings import verdict_warnings

__all__ = ["breakdowns_section", "comparisons_section", "missing_section", "overview_section", "ranking_section"]


def overview_section(p: PageContext) -> Section | None:
    s, pct = p.summary, p.pct
    students = s["students"]
    best = next(iter(students), None)
    if best is not None and students[best].get("rank_range") != [1, 1]:
        best = None  # no "Top student" while the top rank is not determined
    others = sum(e["n_records"] for e in s.get("evaluator_records", {}).values())
    keys = [
        ("students", str(len(students))),
        ("LLM judges", str(len(s["agreement"]["judges"]))),
        ("teachers", str(len(s["teachers"]))),
        ("datapoints", f"{s['n_items']:,}"),
        ("judge records", f"{sum(j['n_records'] for j in s['judges'].values()):,}"),  # LLM judges only
        *([("gold, metric and label records", f"{others:,}")] if others else []),
        ("failed", f"{s['n_failed']:,}"),
        ("duplicates dropped", f"{s['n_duplicates']:,}"),
        ("Krippendorff's α", _fmt(s["agreement"]["krippendorff_alpha"])),
    ]
    intro = (
        f"Experiment <b>{html.escape(s['experiment_id'])}</b>. "
        + (f"Top student by the headline score: <b>{html.escape(best)}</b>. " if best else "")
        + "Scores run from 0 (every factor Low) to 1 (every factor High); "
        + (
            f"intervals are {pct} bootstrap intervals over datapoints ({s['settings']['n_boot']} resamples)."
            if s["settings"]["n_boot"]
            else "no intervals were computed (--bootstrap 0)."
        )
    )
    if s.get("run_warning"):
        intro += f" <b>{html.escape(s['run_warning'])}</b>"
    return (Section("overview", "Overview", "", [Text(Markup(intro)), KeyFigures(keys)]))


def _top_warnings(p: PageContext) -> Text | None:
    """The first warnings, as the console prints them (each with its action); the rest below."""
    warnings = [w for w in p.summary.get("warnings") or [] if isinstance(w, dict)]
    shown, left = verdict_warnings(warnings)
    if not shown:
        return None
    items = "".join(
        f"<li>{html.escape(what)}" + (f'<br><span class="action">Action: {html.escape(action)}</span>' if action else "")
        + "</li>"
        for what, action in shown
    )
    more = f'<p>{left} more in <a href="#warnings">Warnings</a>.</p>' if left else ""
    return Text(Markup(f'<ul class="top-warnings">{items}</ul>{more}'))


def ranking_section(p: PageContext) -> Section | None:
    """The leaderboard: the one ranking of every surface (console, viewer, export)."""
    board = p.summary.get("leaderboard")
    if not isinstance(board, dict) or not board.get("rows"):
        return None
    columns = board["columns"]
    rows = [
        {"rank_label": r["rank_label"], "student": r["student"], "headline": r["headline"], "ci": r["headline_ci"],
         **{c["key"]: (r["evidence"].get(c["key"]) or {}).get("score") for c in columns}}
        for r in board["rows"]
    ]  # fmt: skip
    cols = [("rank_label", "#"), ("student", "student"), ("headline", "headline"), ("ci", f"{p.pct} CI"),
            *((c["key"], c["title"]) for c in columns)]  # fmt: skip
    lines = []
    if board.get("tiers_line"):
        lines.append(f'<p id="tiers"><b>Tiers:</b> {html.escape(board["tiers_line"])}</p>')
    if board.get("combined"):
        combined = board["combined"][:1].upper() + board["combined"][1:]
        lines.append(f'<p id="combined">{html.escape(combined.rstrip("."))}.</p>')
    n = len(board["rows"])
    blocks = [
        Table(cols, rows),
        Text(Markup("".join(lines))) if lines else None,
        _top_warnings(p),
        p.fig("fig-ranking", leaderboard_figure(board, p.pct), max(220, 90 + 45 * n)),
    ]
    return Section(
        "ranking",
        "Leaderboard",
        "One score per student, the headline, with its interval; # is the range of places the data allow "
        "(2-3: not told apart, see Comparisons). One column per kind of evidence the run has.",
        [b for b in blocks if b],
    )


def breakdowns_section(p: PageContext) -> Section | None:
    s, t, pct, fig = p.summary, p.tables, p.pct, p.fig
    students = s["students"]
    slices = t["student_scores"]
    order = list(students)
    blocks: list[Any] = []
    for kind, title in (
        ("task", "by task"),
        ("factor", "by rubric factor"),
        ("teacher", "by teacher"),
        ("judge", "by judge / evaluator"),
        ("attribute", "by attribute value"),
    ):
        n_rows = len(slices[slices["kind"] == kind][["task", "slice"]].drop_duplicates())
        f = fig(f"fig-{kind}", heatmap(slices, kind, f"Score {title}", order), max(240, 120 + 28 * n_rows))
        if f:
            blocks.append(f)
    brows = slices[slices["kind"] != "overall"].to_dict("records")
    for r in brows:
        r["ci"] = [r.pop("ci_low"), r.pop("ci_high")]
    blocks.append(
        Table(
            [
                ("kind", "by"),
                ("task", "task"),
                ("slice", "slice"),
                ("student", "student"),
                ("score", "score"),
                ("ci", f"{pct} CI"),
                ("n", "responses"),
            ],
            brows,
        )
    )
    return (
        Section("breakdowns", "Breakdowns", f"Student scores by slice, with {pct} intervals.", blocks)
    )


def comparisons_section(p: PageContext) -> Section | None:
    pairs = p.summary.get("comparisons") or []
    students = [r["student"] for r in (p.summary.get("leaderboard") or {}).get("rows", []) if r["headline"] is not None]
    if not pairs:
        return None
    return Section(
        "comparisons",
        "Comparisons",
        f"Every pair of students on the headline: the difference, its paired {p.pct} bootstrap interval "
        "(both students answered the same datapoints, so it is much narrower than their two intervals "
        "suggest) and a bootstrap p-value. Students whose interval contains 0 share a rank range.",
        [
            b
            for b in (
                p.fig(
                    "fig-comparisons", comparison_matrix(students, pairs), max(300, 140 + 45 * len(students))
                ),
                Table(
                    [("a", "student A"), ("b", "student B"), ("diff", "A − B"),
                     ("ci", f"{p.pct} CI"), ("p", "p")],
                    pairs,
                ),
            )
            if b
        ],
    )  # fmt: skip


def missing_section(p: PageContext) -> Section | None:
    students = p.summary["students"]
    rows = [{"student": k, **v} for k, v in students.items()]
    blocks: list[Any] = [
        Table(
            [("student", "student"), ("n_answers", "answers"), ("n_failed", "failed answers"),
             ("n_unjudged", "no usable score"), ("n_judgments_failed", "failed judgments"), ("failure_rate", "failure rate"),
             ("missing_rate", "missing rate"), ("n_items", "datapoints scored"),
             ("unrelated_judge_weight", "weight of unrelated judges")],
            rows,
        )
    ]  # fmt: skip
    common = p.summary.get("common_items")
    if common:
        crows = [{"student": k, **v} for k, v in common["students"].items()]
        blocks.append(
            Text(
                Markup(f"<p>Ranking on the {common['n_items']:,} datapoints every student has a score on:</p>")
            )
        )
        blocks.append(Table([("rank", "rank"), ("student", "student"), ("score", "judged score")], crows))
    return Section(
        "missing",
        "Missing data",
        "Answers that failed (phase 4) or have no usable judge score, per student. A student with no "
        "score at all stays listed, unranked. When these rates differ by more than 5 points the ranking "
        "on the datapoints every student answered is shown too (coeval analyze --common-items always adds "
        "it). Weight of unrelated judges: the share of the judge weight that may score the student.",
        blocks,
    )
