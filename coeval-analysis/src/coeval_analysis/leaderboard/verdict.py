"""What ``coeval analyze`` prints: the verdict first.

By default: the leaderboard, one line of tiers, one sentence on how the headline is
combined, and at most three warnings (the kinds that change the answer most, each with its
action). With ``-v``: every note, warning and data-quality count after it. Every line is
wrapped to the terminal's width; text from the run folder is printed as text.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from coeval.console.text import plain

from coeval_analysis.leaderboard.view import LeaderboardTable, leaderboard_of_summary
from coeval_analysis.warnings.run_warnings import verdict_warnings

__all__ = ["console_width", "table_lines", "verdict_lines"]

#: off a terminal, and without COLUMNS, lines are wrapped here
DEFAULT_WIDTH = 100
_GAP = "  "


def console_width() -> int:
    """``COLUMNS`` when set, else the terminal's width, else :data:`DEFAULT_WIDTH`."""
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) >= 20:
        return int(env)
    if sys.stdout.isatty():
        return max(20, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)
    return DEFAULT_WIDTH


def _wrap(text: str, width: int, first: str = "", rest: str = "  ") -> list[str]:
    return textwrap.wrap(plain(text), width=width, initial_indent=first, subsequent_indent=rest,
                         break_long_words=True, break_on_hyphens=False) or [first.rstrip()]  # fmt: skip


def table_lines(table: LeaderboardTable, width: int) -> list[str]:
    """The leaderboard as aligned text: names left, numbers right; a name too long for the
    width is cut with an ellipsis (the full name is in summary.json and the report)."""
    rows = [tuple(plain(c) for c in r) for r in table.rows]
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(table.header)]
    over = sum(widths) + len(_GAP) * (len(widths) - 1) - width
    if over > 0:
        widths[1] = max(len(table.header[1]), widths[1] - over)

    def line(cells: Sequence[str]) -> str:
        out = []
        for i, (cell, w) in enumerate(zip(cells, widths, strict=True)):
            cell = cell if len(cell) <= w else cell[: w - 1] + "…"
            out.append(cell.ljust(w) if i == 1 else cell.rjust(w))
        return _GAP.join(out).rstrip()

    head = line(table.header)
    return [head, "─" * min(width, len(head)), *(line(r) for r in rows)]


def _sentence(text: str) -> str:
    text = text.strip()
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text.endswith(".") else text + "."


def _warning_lines(summary: Mapping[str, Any], width: int, verbose: bool) -> list[str]:
    warnings = [w for w in summary.get("warnings") or [] if isinstance(w, dict)]
    out: list[str] = []
    if verbose:
        for note in summary.get("headline_notes") or []:
            out += _wrap(str(note), width, "note: ")
        for w in warnings:
            out += _wrap(str(w.get("message", "")), width, "warning: ")
        if summary.get("reference"):
            out += _wrap(str(summary["reference"].get("line", "")), width, "labels: ")
        q = summary.get("data_quality") or {}
        if q:
            out += _wrap(f"records {q['n_records']:,}; failed {q['n_failed']:,}; duplicates dropped "
                         f"{q['n_duplicates']:,}; orphaned {q['n_orphaned']:,}; incomplete {q['n_incomplete']:,}",
                         width)  # fmt: skip
        return out
    shown, left = verdict_warnings(warnings)
    for what, action in shown:
        out += _wrap(what, width, "warning: ")
        if action:
            out += _wrap(action, width, "  action: ", "          ")
    more = left + len(summary.get("headline_notes") or []) + (1 if summary.get("reference") else 0)
    if more:
        out += _wrap(f"{more} more warnings and notes: `coeval analyze -v`, or the report.", width)
    return out


def verdict_lines(summary: Mapping[str, Any], width: int, *, verbose: bool = False) -> list[str]:
    """The console's verdict on an analysis, as lines no wider than ``width``."""
    table = leaderboard_of_summary(summary)
    out = [plain(f"{summary.get('experiment_id', '')}: leaderboard")[:width]]
    if table is None:
        out += _wrap("No usable score in this run: every record failed or could not be used (see data quality in "
                     "summary.json).", width)  # fmt: skip
    else:
        out += table_lines(table, width)
        if table.tiers:
            out += _wrap(table.tiers, width, "tiers: ")
        if table.combined:
            out += _wrap(_sentence(table.combined), width, "", "")
    return out + _warning_lines(summary, width, verbose)
