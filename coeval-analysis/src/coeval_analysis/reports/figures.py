"""The report's charts as plotly figure specs (plain dicts): rankings, heat maps, bars,
judge-pair matrices, histograms. The page's own script draws them from one JSON island."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["COLORS", "bar", "comparison_matrix", "heatmap", "histogram", "leaderboard_figure", "matrix_figure", "verbosity_figure"]


COLORS = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#eeca3b", "#b279a2", "#ff9da6", "#9d755d"]


_MAX_SCATTER = 3000


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


def leaderboard_figure(board: dict[str, Any], pct: str = "95%") -> dict[str, Any] | None:
    """Each student's headline with its interval, best at the top; the axis spans [0, 1] and
    every interval, so none runs off the plot."""
    rows = [r for r in board["rows"] if r["headline"] is not None][::-1]
    if not rows:
        return None
    names = [r["student"] for r in rows]
    x = [r["headline"] for r in rows]
    lows = [(r["headline_ci"] or [None, None])[0] for r in rows]
    highs = [(r["headline_ci"] or [None, None])[1] for r in rows]
    reach = [v for v in (*x, *lows, *highs) if v is not None]
    left, right = min(0.0, *reach), max(1.0, *reach)
    pad = 0.02 * (right - left)  # room for a marker at the edge; none below 0 unless something is there
    return {
        "data": [{
            "type": "scatter", "mode": "markers", "name": "headline", "x": x, "y": names,
            "marker": {"size": 10, "color": COLORS[1]},
            "error_x": {"type": "data", "symmetric": False, "color": COLORS[1],
                        "array": [None if h is None else h - v for h, v in zip(highs, x, strict=True)],
                        "arrayminus": [None if lo is None else v - lo for lo, v in zip(lows, x, strict=True)]},
        }],
        "layout": _layout(
            f"Leaderboard: headline with {pct} interval",
            xaxis={"title": {"text": "headline (0 to 1)"}, "range": [left - pad if left < 0 else 0.0, right + pad]},
            showlegend=False,
        ),
    }


def heatmap(
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


def bar(
    names: list[str],
    values: list[Any],
    title: str,
    ci: list[list[Any]] | None = None,
    axis: str = "",
    color: str = COLORS[0],
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


def matrix_figure(judges: list[str], pairs: list[dict[str, Any]], key: str, title: str) -> dict[str, Any]:
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


def verbosity_figure(responses: pd.DataFrame) -> dict[str, Any] | None:
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
                "marker": {"size": 5, "opacity": 0.5, "color": COLORS[i % len(COLORS)]},
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


def histogram(values: np.ndarray, title: str, axis: str) -> dict[str, Any]:
    v = values[np.isfinite(values)]
    counts, edges = np.histogram(v, bins=20, range=(0.0, 1.0))
    centres = ((edges[:-1] + edges[1:]) / 2).round(3).tolist()
    return {
        "data": [{"type": "bar", "x": centres, "y": counts.tolist(), "marker": {"color": COLORS[4]}}],
        "layout": _layout(
            title,
            margin={"l": 60, "r": 30, "t": 40, "b": 50},
            xaxis={"title": {"text": axis}},
            yaxis={"title": {"text": "datapoints"}},
            bargap=0.05,
        ),
    }


def _evidence(p: float | None) -> float:
    """How strongly a p-value speaks, 0 (p = 1, or none) to 1 (p <= 0.001) on a log scale:
    p = 0.78 gives 0.04, 0.05 gives 0.43, 0.002 gives 0.9."""
    if p is None or not p > 0:
        return 1.0 if p == 0 else 0.0
    return min(1.0, max(0.0, -math.log10(p) / 3))


def comparison_matrix(students: list[str], pairs: list[dict[str, Any]]) -> dict[str, Any] | None:
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
            "Row minus column (headline); colour: its p-value; * interval excludes 0",
            margin={"l": 150, "r": 30, "t": 40, "b": 120},
            yaxis={"autorange": "reversed"},
        ),
    }  # fmt: skip
