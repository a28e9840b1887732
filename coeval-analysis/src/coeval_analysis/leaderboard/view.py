"""The leaderboard as text cells, formatted once for every surface (console, report,
viewer, export), so none can print a number the others do not.

:func:`leaderboard_table` turns :func:`coeval_analysis.leaderboard.leaderboard` into a
header and rows of strings; each surface lays those strings out its own way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from coeval_analysis.leaderboard.board import Leaderboard, leaderboard

__all__ = ["LeaderboardTable", "interval_text", "leaderboard_of_summary", "leaderboard_table", "number"]


def number(value: Any) -> str:
    """Three decimals, never scientific notation; ``—`` for no value (``-0.000`` reads ``0.000``)."""
    if value is None or isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return "—"
    text = f"{float(value):.3f}"
    return "0.000" if text == "-0.000" else text


def interval_text(ci: Sequence[Any] | None) -> str:
    """``[low, high]`` rounded like the values, or ``—`` without an interval."""
    if not ci or len(ci) != 2 or ci[0] is None or ci[1] is None:
        return "—"
    return f"[{number(ci[0])}, {number(ci[1])}]"


@attrs.frozen
class LeaderboardTable:
    """The leaderboard's cells: ``header`` names the columns, each row is one student's
    strings in that order (the student's name second). ``tiers`` and ``combined`` are the
    two lines shown under it."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    tiers: str
    combined: str
    #: the students whose place the data do not settle, with why
    not_determined: tuple[tuple[str, str], ...] = ()


def leaderboard_table(board: Leaderboard) -> LeaderboardTable:
    """Rank range, student, headline, interval, then one column per kind of evidence."""
    columns = board["columns"]
    header = ("#", "student", "headline", f"{board['level'] * 100:g}% CI", *(c["title"] for c in columns))
    rows = []
    for r in board["rows"]:
        evidence = r["evidence"]
        cells = [number(evidence[c["key"]]["score"]) if c["key"] in evidence else "—" for c in columns]
        rows.append((r["rank_label"] or "—", r["student"], number(r["headline"]), interval_text(r["headline_ci"]),
                     *cells))  # fmt: skip
    undetermined = tuple((r["student"], str(r["not_determined"])) for r in board["rows"] if r["not_determined"])
    return LeaderboardTable(header, tuple(rows), board["tiers_line"], board["combined"], undetermined)


def leaderboard_of_summary(summary: Mapping[str, Any]) -> LeaderboardTable | None:
    """The leaderboard's cells of a summary; None when it has none (written by an older
    ``coeval analyze``) or no student has a headline."""
    try:
        board = leaderboard(summary)
    except (ValueError, KeyError, TypeError):
        return None
    if not any(r["headline"] is not None for r in board["rows"]):
        return None
    return leaderboard_table(board)
