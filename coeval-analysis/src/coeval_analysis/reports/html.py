"""The self-contained HTML report: one file, plotly.js embedded once, no network access.

The page is built from the analysis summary and tables only (nothing is recomputed), as a
list of sections, each a list of blocks (text, key figures, a chart, a sortable table).
Charts are plotly figure specs in one JSON island, drawn by the page's own script, so the
file works from ``file://`` with no CDN and no server.
"""

from __future__ import annotations

import html
import importlib.util
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from coeval_analysis.reports.blocks import Figure, KeyFigures, Section, Table, Text
from coeval_analysis.reports.blocks import cell as _cell
from coeval_analysis.reports.blocks import fmt as _fmt
from coeval_analysis.reports.checks_section import checks_section
from coeval_analysis.reports.item_quality import item_quality_section
from coeval_analysis.reports.quality_labels import quality_rows
from coeval_analysis.reports.reference_section import reference_section
from coeval_analysis.reports.summary import to_jsonable
from coeval_analysis.reports.viewer_links import viewer_section

if TYPE_CHECKING:
    from coeval_analysis.analysis import Analysis

__all__ = ["build_page", "write_html"]

_COLORS = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#eeca3b", "#b279a2", "#ff9da6", "#9d755d"]
_MAX_SCATTER = 3000


def plotly_js() -> str:
    """The plotly.js bundle shipped inside the ``plotly`` package (no download; the Python
    package itself is not imported)."""
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the plotly package is not installed (pip install plotly)")
    folder = Path(next(iter(spec.submodule_search_locations)))
    return (folder / "package_data" / "plotly.min.js").read_text(encoding="utf-8")


# ------------------------------------------------------------------------------------------
# figures


def _layout(title: str = "", **kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "title": {"text": title, "font": {"size": 14}},
        "margin": {"l": 40, "r": 30, "t": 40 if title else 20, "b": 50},
        "yaxis": {"automargin": True},
        "font": {"family": "system-ui, -apple-system, Segoe UI, sans-serif", "size": 12},
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#fafafa",
        "hovermode": "closest",
    }
    base.update(kw)
    return base


def _ranking_figure(students: dict[str, Any], pct: str = "95%") -> dict[str, Any]:
    names = list(students)[::-1]
    traces = []
    for key, ci_key, label, color in (
        ("score", "ci", "mean score", _COLORS[0]),
        ("robust_score", "robust_ci", "robust score", _COLORS[1]),
    ):
        x = [students[s][key] for s in names]
        lo = [
            (v - students[s][ci_key][0]) if v is not None and students[s][ci_key][0] is not None else None
            for s, v in zip(names, x, strict=True)
        ]
        hi = [
            (students[s][ci_key][1] - v) if v is not None and students[s][ci_key][1] is not None else None
            for s, v in zip(names, x, strict=True)
        ]
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": label,
                "x": x,
                "y": names,
                "marker": {"size": 10, "color": color},
                "error_x": {
                    "type": "data",
                    "symmetric": False,
                    "array": hi,
                    "arrayminus": lo,
                    "color": color,
                },
            }
        )
    gold = [students[s].get("gold_score") for s in names]
    if any(g is not None for g in gold):
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "gold",
                "x": gold,
                "y": names,
                "marker": {"size": 10, "symbol": "diamond", "color": _COLORS[2]},
            }
        )
    return {
        "data": traces,
        "layout": _layout(
            f"Students: score with {pct} interval",
            # scores live in [0, 1]: autorange may zoom in, never show impossible scores
            xaxis={
                "title": {"text": "score (0 = all Low, 1 = all High)"},
                "autorangeoptions": {"minallowed": 0, "maxallowed": 1.02},
            },
            legend={"orientation": "h", "y": -0.2},
        ),
    }


def _heatmap(
    slices: pd.DataFrame, kind: str, title: str, students: list[str], task: str | None = None
) -> dict[str, Any] | None:
    sub = slices[slices["kind"] == kind]
    if task is not None:
        sub = sub[sub["task"] == task]
    if sub.empty:
        return None
    # an attribute value named alike in two tasks is two rows, labelled with their task
    shared = sub.groupby("slice")["task"].transform("nunique") > 1
    sub = sub.assign(
        row=np.where(shared, sub["task"].astype(str) + ": " + sub["slice"].astype(str), sub["slice"])
    )
    piv = sub.pivot_table(index="row", columns="student", values="score", aggfunc="first", sort=True)
    piv = piv.reindex(columns=[s for s in students if s in piv.columns]).iloc[::-1]
    z = [[None if pd.isna(v) else round(float(v), 4) for v in row] for row in piv.to_numpy()]
    text = [["" if v is None else f"{v:.2f}" for v in row] for row in z]
    values = [v for row in z for v in row if v is not None]
    # one value everywhere: plotly would centre a scale of width 1 on it (0.5..1.5 for 1.0)
    flat = {"zmin": 0.0, "zmax": 1.0} if values and max(values) - min(values) < 1e-9 else {}
    return {
        "data": [
            {
                "type": "heatmap",
                "z": z,
                **flat,
                "x": list(piv.columns),
                "y": [str(i) for i in piv.index],
                "text": text,
                "texttemplate": "%{text}",
                "colorscale": "Viridis",
                "colorbar": {"title": {"text": "score"}},
                "hovertemplate": "%{y}<br>%{x}: %{z:.3f}<extra></extra>",
            }
        ],
        "layout": _layout(
            title,
            margin={"l": 40, "r": 30, "t": 40, "b": 90},
            yaxis={"automargin": True},
            xaxis={"automargin": True},
        ),
    }


def _bar(
    names: list[str],
    values: list[Any],
    title: str,
    ci: list[list[Any]] | None = None,
    axis: str = "",
    color: str = _COLORS[0],
    max_value: float | None = None,
) -> dict[str, Any]:
    """A horizontal bar chart of non-negative values (at most ``max_value``): the axis never
    runs below 0 (plotly draws -1..1 when every value is 0)."""
    trace: dict[str, Any] = {
        "type": "bar",
        "orientation": "h",
        "x": values,
        "y": names,
        "marker": {"color": color},
    }
    if ci is not None:
        trace["error_x"] = {
            "type": "data",
            "symmetric": False,
            "array": [
                None if v is None or c[1] is None else c[1] - v for v, c in zip(values, ci, strict=True)
            ],
            "arrayminus": [
                None if v is None or c[0] is None else v - c[0] for v, c in zip(values, ci, strict=True)
            ],
        }
    limits: dict[str, float] = {"minallowed": 0}
    if max_value is not None:
        limits["maxallowed"] = max_value
    return {
        "data": [trace],
        "layout": _layout(title, xaxis={"title": {"text": axis}, "autorangeoptions": limits}),
    }


#: the colour scale of an agreement matrix spans at least -0.1..0.1, so near-zero values stay pale
_MIN_MATRIX_SCALE = 0.1


def _matrix_figure(judges: list[str], pairs: list[dict[str, Any]], key: str, title: str) -> dict[str, Any]:
    """A judge-by-judge agreement matrix. The diagonal (a judge with itself, always 1) is
    left blank and out of the colour scale: the scale spans the pairs' own values,
    symmetric around 0, so their differences show instead of all looking pale beside 1."""
    idx = {j: i for i, j in enumerate(judges)}
    z: list[list[float | None]] = [[None] * len(judges) for _ in judges]
    for p in pairs:
        v = p.get(key)
        a, b = idx[p["a"]], idx[p["b"]]
        z[a][b] = z[b][a] = None if v is None else round(float(v), 4)
    off_diagonal = [abs(v) for row in z for v in row if v is not None]
    top = min(1.0, max([_MIN_MATRIX_SCALE, *off_diagonal]))
    text = [
        ["—" if i == k else "" if v is None else f"{v:.2f}" for k, v in enumerate(row)] for i, row in enumerate(z)
    ]
    return {
        "data": [
            {
                "type": "heatmap",
                "z": z,
                "x": judges,
                "y": judges,
                "text": text,
                "texttemplate": "%{text}",
                "colorscale": "RdBu",
                "zmin": -top,
                "zmax": top,
                "reversescale": False,
            }
        ],
        "layout": _layout(title, margin={"l": 150, "r": 30, "t": 40, "b": 120}),
    }


def _verbosity_figure(responses: pd.DataFrame) -> dict[str, Any] | None:
    if responses is None or responses.empty or responses["length"].isna().all():
        return None
    df = responses.dropna(subset=["length", "robust_score"])
    if len(df) > _MAX_SCATTER:
        df = df.sample(_MAX_SCATTER, random_state=0)
    traces = []
    for i, (student, g) in enumerate(df.groupby("student", observed=True, sort=True)):
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": str(student),
                "x": g["length"].round(0).tolist(),
                "y": g["robust_score"].round(4).tolist(),
                "marker": {"size": 5, "opacity": 0.5, "color": _COLORS[i % len(_COLORS)]},
            }
        )
    return {
        "data": traces,
        "layout": _layout(
            "Answer length vs score (sample)",
            xaxis={"title": {"text": "answer length (characters)"}, "type": "log"},
            yaxis={"title": {"text": "judge-weighted score"}},
        ),
    }


def _histogram(values: np.ndarray, title: str, axis: str) -> dict[str, Any]:
    v = values[np.isfinite(values)]
    counts, edges = np.histogram(v, bins=20, range=(0.0, 1.0))
    centres = ((edges[:-1] + edges[1:]) / 2).round(3).tolist()
    return {
        "data": [{"type": "bar", "x": centres, "y": counts.tolist(), "marker": {"color": _COLORS[4]}}],
        "layout": _layout(
            title,
            margin={"l": 60, "r": 30, "t": 40, "b": 50},
            xaxis={"title": {"text": axis}},
            yaxis={"title": {"text": "datapoints"}},
            bargap=0.05,
        ),
    }


# ------------------------------------------------------------------------------------------
# sections


@dataclass
class PageContext:
    """What every section builder reads: the JSON-ready summary, the tables, the confidence
    level as text, and the figure specs collected so far (one JSON island per page)."""

    summary: dict[str, Any]
    tables: dict[str, Any]
    pct: str
    figs: dict[str, Any] = field(default_factory=dict)

    def fig(self, fid: str, spec: dict[str, Any] | None, height: int = 380) -> Figure | None:
        """Register a chart and return its block (None when there is nothing to draw)."""
        if spec is None:
            return None
        self.figs[fid] = spec
        return Figure(fid, spec, height)


def _overview_section(p: PageContext) -> Section | None:
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


def _ranking_section(p: PageContext) -> Section | None:
    s, pct, fig = p.summary, p.pct, p.fig
    students = s["students"]
    rank_rows = [{"student": k, **v} for k, v in students.items()]
    cols = [
        ("rank_label", "rank"),
        ("student", "student"),
        ("robust_score", "robust score"),
        ("robust_ci", f"robust {pct} CI"),
        ("rank_ci", f"rank {pct} CI"),
        ("score", "mean score"),
        ("ci", f"{pct} CI"),
        ("rank", "mean rank"),
        ("robust_unadjusted_score", "agreement-weighted score"),
        ("robust_unadjusted_rank", "agreement-weighted rank"),
        ("n_responses", "responses"),
    ]
    if any("gold_score" in r for r in rank_rows):
        cols += [("gold_score", "gold score"), ("gold_ci", f"gold {pct} CI")]
    notes = s.get("headline_notes") or []
    why = Text(Markup("<ul class=\"headline-notes\">" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>"))
    return (
        Section(
            "ranking",
            "Student ranking",
            "Robust score (the headline): each judge has a location, a scale (how strongly its scores follow "
            "answer quality) and a noise, measured on answers other judges also grade; each counts by how well "
            "it tells answers apart, and a judge's bias toward its own family is estimated where competent "
            "unrelated judges grade the same answers, else bounded by a prior whose spread is in the interval. "
            "Rank: the range of ranks the data allow, such as 2-3 (see Comparisons). Mean score: every judgment "
            "counts equally. Agreement-weighted score: an earlier robust score, without conflict handling.",
            [
                b
                for b in (
                    fig("fig-ranking", _ranking_figure(students, pct), max(220, 90 + 45 * len(students))),
                    Table(cols, rank_rows),
                    why if notes else None,
                )
                if b
            ],
        )
    )


def _breakdowns_section(p: PageContext) -> Section | None:
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
        f = fig(f"fig-{kind}", _heatmap(slices, kind, f"Score {title}", order), max(240, 120 + 28 * n_rows))
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


def _judges_section(p: PageContext) -> Section | None:
    s, pct, fig = p.summary, p.pct, p.fig
    judges = s["judges"]
    llm = [j for j in judges if "weight" in judges[j]]
    jblocks: list[Any] = []
    if llm:
        jblocks.append(
            fig(
                "fig-weights",
                _bar(
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
            _bar(
                names,
                [everyone[j]["failure_rate"] for j in names],
                "Failure rate",
                axis="share of records failed",
                color=_COLORS[3],
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
                ("n_conflicted", "conflicted (left out)"),
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
            "A judge's weight grows with its signal-to-noise ratio, estimated from its correlation with the "
            "weighted consensus of the other judges on the answers it is not related to; a judge "
            "answering at random gets about 0. Leniency: how much higher than the others it scores "
            "(subtracted). Conflicted: "
            "its scores of its own or its family's answers, left out of the robust score. Agreement-only "
            "weight: the earlier weighting, which counted those scores. Failed records "
            "(unparseable replies, errors) are counted here, never scored as Low.",
            [b for b in jblocks if b],
        )
    )


def _agreement_section(p: PageContext) -> Section | None:
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
                _matrix_figure(ag["judges"], ag["pairwise"], "kappa", "Cohen's κ by pair"),
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


def _teachers_section(p: PageContext) -> Section | None:
    s, t, fig = p.summary, p.tables, p.fig
    teachers = s["teachers"]
    tnames = list(teachers)
    tblocks: list[Any] = [
        fig(
            "fig-teachers",
            _bar(
                tnames,
                [teachers[x]["discrimination"] for x in tnames],
                "Teacher discrimination",
                axis="mean per-datapoint spread of student scores",
                color=_COLORS[2],
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
                _histogram(
                    dps["item_weight"].to_numpy(), "Datapoint weights in the robust score", "item weight"
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
            "easy its datapoints are. Datapoint weights: the weight each datapoint gets in the robust score, "
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


def _bias_section(p: PageContext) -> Section | None:
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
        fig("fig-verbosity", _verbosity_figure(t.get("responses")), 420),
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


def _coverage_section(p: PageContext) -> Section | None:
    s, t, fig = p.summary, p.tables, p.fig
    cov = s["coverage"]
    cnames = list(cov)
    cblocks: list[Any] = []
    if cnames:
        cblocks.append(
            fig(
                "fig-coverage",
                _bar(
                    cnames,
                    [cov[c]["value_coverage"] for c in cnames],
                    "Attribute values covered",
                    axis="share of values with a datapoint",
                    color=_COLORS[5],
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


def _references_section(p: PageContext) -> Section | None:
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
                "correlation is in the table. Ranking vs gold: Spearman's ρ between the robust ranking and "
                "the gold ranking of the students. Each student's gold score is in the ranking table.",
                rblocks,
            )
        )
    return None


def _quality_section(p: PageContext) -> Section | None:
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


def _warnings_section(p: PageContext) -> Section | None:
    warnings = p.summary.get("warnings") or []
    if not warnings:
        return None
    items = "".join(f"<li>{html.escape(w['message'])}</li>" for w in warnings)
    return Section(
        "warnings",
        "Warnings",
        "Findings that change how far to trust the ranking.",
        [Text(Markup(f"<ul class=\"warnings\">{items}</ul>"))],
    )


def _evidence(p: float | None) -> float:
    """How strongly a p-value speaks, 0 (p = 1, or none) to 1 (p <= 0.001) on a log scale:
    p = 0.78 gives 0.04, 0.05 gives 0.43, 0.002 gives 0.9."""
    if p is None or not p > 0:
        return 1.0 if p == 0 else 0.0
    return min(1.0, max(0.0, -math.log10(p) / 3))


def _comparison_matrix(students: list[str], pairs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Heatmap of row-minus-column differences; text marks the significant ones."""
    if len(students) < 2 or not pairs:
        return None
    idx = {name: i for i, name in enumerate(students)}
    n = len(students)
    z: list[list[float | None]] = [[None] * n for _ in range(n)]
    text = [[""] * n for _ in range(n)]
    for c in pairs:
        a, b = idx.get(c["a"]), idx.get(c["b"])
        if a is None or b is None:
            continue
        lo, hi = c["ci"]
        star = "*" if lo is not None and hi is not None and (lo > 0 or hi < 0) else ""
        strength = _evidence(c.get("p")) * (1 if c["diff"] > 0 else -1 if c["diff"] < 0 else 0)
        z[a][b], z[b][a] = round(strength, 4), round(-strength, 4)
        text[a][b], text[b][a] = f"{c['diff']:+.3f}{star}", f"{-c['diff']:+.3f}{star}"
    return {
        "data": [
            {"type": "heatmap", "z": z, "x": students, "y": students, "text": text,
             "texttemplate": "%{text}", "colorscale": "RdBu", "zmin": -1, "zmax": 1,
             "colorbar": {"tickvals": [-1, -2 / 3, -1 / 3, 0, 1 / 3, 2 / 3, 1],
                          "ticktext": ["p≤0.001", "p 0.01", "p 0.1", "p 1", "p 0.1", "p 0.01", "p≤0.001"]}}
        ],
        "layout": _layout(
            "Row minus column (robust score); colour: its p-value; * interval excludes 0",
            margin={"l": 150, "r": 30, "t": 40, "b": 120},
            yaxis={"autorange": "reversed"},
        ),
    }  # fmt: skip


def _comparisons_section(p: PageContext) -> Section | None:
    pairs = p.summary.get("comparisons") or []
    students = [k for k, v in p.summary["students"].items() if v.get("robust_score") is not None]
    if not pairs:
        return None
    return Section(
        "comparisons",
        "Comparisons",
        f"Every pair of students on the robust score: the difference, its paired {p.pct} bootstrap interval "
        "(both students answered the same datapoints, so it is much narrower than their two intervals "
        "suggest) and a bootstrap p-value. Students whose interval contains 0 share a rank range.",
        [
            b
            for b in (
                p.fig(
                    "fig-comparisons", _comparison_matrix(students, pairs), max(300, 140 + 45 * len(students))
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


def _missing_section(p: PageContext) -> Section | None:
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
        blocks.append(Table([("rank", "rank"), ("student", "student"), ("score", "robust score")], crows))
    return Section(
        "missing",
        "Missing data",
        "Answers that failed (phase 4) or have no usable judge score, per student. A student with no "
        "score at all stays listed, unranked. When these rates differ by more than 5 points the ranking "
        "on the datapoints every student answered is shown too (coeval analyze --common-items always adds "
        "it). Weight of unrelated judges: the share of the judge weight that may score the student.",
        blocks,
    )


#: the report's sections in page order; a branch adds one with a one-line edit here
SECTIONS: list[Callable[[PageContext], Section | None]] = [
    _overview_section,
    _warnings_section,
    _ranking_section,
    _comparisons_section,
    _missing_section,
    _breakdowns_section,
    _judges_section,
    _agreement_section,
    _teachers_section,
    item_quality_section,
    _bias_section,
    _coverage_section,
    _references_section,
    reference_section,
    checks_section,
    _quality_section,
    viewer_section,
]


def build_page(analysis: Analysis) -> tuple[list[Section], dict[str, Any]]:
    """The page's sections (those with something to show) and its figure specs."""
    s = to_jsonable(analysis.summary)
    ctx = PageContext(s, analysis.tables, f"{s['settings']['level'] * 100:g}%")
    sections = [sec for build in SECTIONS if (sec := build(ctx)) is not None]
    return sections, ctx.figs


#: characters an HTML parser reads inside ``<script>`` (``</script>``, ``<!--``) or that end a
#: JavaScript line: written as JSON ``\\u`` escapes, which JSON.parse reads back unchanged
_SCRIPT_UNSAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                                "\u2028": "\\u2028", "\u2029": "\\u2029"})
#: figure keys whose value is plotly markup the report writes itself (the rest is data)
_PLOTLY_TEMPLATES = frozenset({"hovertemplate", "texttemplate"})


def _json_island(obj: Any) -> Markup:
    text = json.dumps(to_jsonable(obj), ensure_ascii=False, separators=(",", ":"))
    return Markup(text.translate(_SCRIPT_UNSAFE))


def _plain_labels(value: Any, key: str = "") -> Any:
    """Figure specs with every label as plain text: plotly reads ``<a href>``, ``<b>``... in
    strings as markup, and labels come from the run (model names, attribute values).
    ``&``, ``<`` and ``>`` become entities, which plotly shows as the characters."""
    if isinstance(value, dict):
        return {k: _plain_labels(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain_labels(v, key) for v in value]
    if isinstance(value, str) and key not in _PLOTLY_TEMPLATES:
        return html.escape(value, quote=False)
    return value


def write_html(analysis: Analysis, out_dir: Path) -> list[Path]:
    env = Environment(
        loader=PackageLoader("coeval_analysis.reports", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
    )
    sections, figs = build_page(analysis)
    page = env.get_template("report.html.j2").render(
        title=f"CoEval analysis: {analysis.summary['experiment_id']}",
        summary=analysis.summary,
        sections=sections,
        figures=_json_island(_plain_labels(figs)),
        plotly_js=Markup(plotly_js()),
    )
    path = Path(out_dir) / "report.html"
    path.write_text(page, encoding="utf-8")
    return [path]
