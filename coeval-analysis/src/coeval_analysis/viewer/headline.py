"""The start page's headline: the ranking ``coeval analyze`` wrote to ``summary.json``,
with rank ranges and intervals, so the viewer, the report, the console and summary.json
show one ranking. Without a current analysis the page says so and shows the mean only."""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from coeval_analysis.viewer.outline import analysis_ranking

__all__ = ["headline_section"]


def _num(value: Any) -> str:
    return "—" if value is None else f"{float(value):.3f}"


def headline_section(run: Path) -> str:
    """HTML of the headline ranking (table ``#headline``), or a note when there is none."""
    rows = analysis_ranking(run)
    if not rows or all(r.get("robust") is None for r in rows):
        return ('<h2>Headline ranking</h2><p id="no-headline">No current <code>coeval analyze</code> of this run: '
                "run it for the headline ranking with rank ranges. Below, the mean score of the judgments.</p>")
    body = []
    notes = []
    for r in rows:
        low, high = r.get("robust_ci") or (None, None)
        interval = f"[{_num(low)}, {_num(high)}]" if low is not None else "—"
        body.append(
            f'<tr><td class="rank">{escape(str(r.get("rank_label") or "—"))}</td>'
            f'<td class="student">{escape(r["student"])}</td><td class="headline">{_num(r.get("robust"))}</td>'
            f'<td class="interval">{interval}</td><td class="mean">{_num(r.get("mean"))}</td></tr>'
        )
        if r.get("not_determined"):
            notes.append(f"<li>{escape(r['student'])}: not determined: {escape(str(r['not_determined']))}</li>")
    why = f'<ul id="not-determined">{"".join(notes)}</ul>' if notes else ""
    return (
        '<h2>Headline ranking</h2><p>From the last <code>coeval analyze</code> (summary.json): judges weighted '
        "by how well they tell answers apart, family bias estimated or bounded; <b>#</b> is the range of ranks "
        'the data allow ("1-4": not told apart).</p>'
        '<table id="headline"><tr><th>#</th><th>Student</th><th>Headline</th><th>Interval</th>'
        f"<th>Mean</th></tr>{''.join(body)}</table>{why}"
    )
