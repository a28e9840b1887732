"""The start page's leaderboard: the one ``coeval analyze`` wrote to ``summary.json``, in the
cells the console prints (:mod:`coeval_analysis.leaderboard.view`), so the viewer, the
report, the console and summary.json show one ranking. Without a current analysis the page
says so, and the start page shows the mean of the judgments instead (labelled as such)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from urllib.parse import urlencode

from coeval_analysis.leaderboard.view import LeaderboardTable
from coeval_analysis.viewer.outline import LeaderboardRows, analysis_leaderboard

__all__ = ["early_leaderboard_html", "headline_section", "leaderboard_html", "leaderboard_rows_html"]


def leaderboard_rows_html(header: Sequence[str], rows: Sequence[Sequence[str]], table_id: str = "leaderboard",
                          base: str = "") -> str:
    """The table: rank range, student (a link filtering the run's start page to it), headline,
    interval, one column per kind of evidence. Without ``base`` links are relative, so they
    stay on the run's page."""
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = []
    for row in rows:
        query = urlencode({"student": row[1]})
        href = f"{base}/?{query}" if base else f"?{query}"
        cells = [f'<td class="rank">{escape(row[0])}</td>',
                 f'<td class="student"><a class="student-link" href="{escape(href)}">{escape(row[1])}</a></td>']
        cells += [f'<td class="num">{escape(c)}</td>' for c in row[2:]]
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f'<table id="{table_id}"><tr>{head}</tr>{"".join(body)}</table>'


def _sentence(text: str) -> str:
    """Capitalised, with one full stop."""
    text = text.strip().rstrip(".")
    return f"{text[:1].upper()}{text[1:]}."


def leaderboard_html(table: LeaderboardTable, table_id: str = "leaderboard") -> str:
    """The leaderboard, its tiers line, how the headline is combined, and why a place is
    not determined."""
    by_reason: dict[str, list[str]] = {}
    for student, why in table.not_determined:  # one line per reason, naming every student it holds for
        by_reason.setdefault(why, []).append(student)
    notes = "".join(f"<li>{escape(', '.join(names))}: not determined: {escape(why)}</li>"
                    for why, names in by_reason.items())  # fmt: skip
    return (
        '<h2>Leaderboard</h2><p>From the last <code>coeval analyze</code> (summary.json); <b>#</b> is the range '
        'of places the data allow ("1-4": not told apart).</p>'
        + leaderboard_rows_html(table.header, table.rows, table_id)
        + (f'<p id="tiers"><b>Tiers:</b> {escape(table.tiers)}</p>' if table.tiers else "")
        + (f'<p id="combined">{escape(_sentence(table.combined))}</p>' if table.combined else "")
        + (f'<ul id="not-determined">{notes}</ul>' if notes else "")
    )


def early_leaderboard_html(rows: Sequence[Mapping[str, str]]) -> str:
    """The leaderboard shown while the run's records are read: the same as the start page's
    when ``rows`` is :func:`~coeval_analysis.viewer.outline.analysis_ranking`'s."""
    if isinstance(rows, LeaderboardRows):
        return leaderboard_html(rows.table, "analysis-ranking")
    header = list(rows[0])
    return leaderboard_rows_html(header, [[r[h] for h in header] for r in rows], "analysis-ranking")


def headline_section(run: Path) -> str:
    """HTML of the leaderboard (table ``#leaderboard``), or a note when there is none."""
    table = analysis_leaderboard(run)
    if table is None:
        return ('<h2>Leaderboard</h2><p id="no-headline">No current <code>coeval analyze</code> of this run: '
                "run it for the leaderboard with rank ranges. Below, the mean score of the judgments.</p>")
    return leaderboard_html(table)
