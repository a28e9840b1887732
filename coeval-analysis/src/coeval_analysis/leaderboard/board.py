"""The leaderboard: the one ranking every surface shows (console, report, viewer, export).

:func:`leaderboard` reads it from a summary (``Analysis.summary`` or a loaded
``summary.json``); :func:`analyze <coeval_analysis.analysis.analyze>` writes it there under
``leaderboard`` (built by :func:`build_leaderboard`), so a surface never recomputes a number
and no two surfaces can disagree.

Per student: the rank range, the headline score with its interval, and one column per kind
of evidence the run has (judged score, checks pass rate, pass@1, pass@k, and gold or label
accuracy reported beside the ranking). Beside the rows: the tiers as one line ("A; then B,
C and D, not separable; then E") and one sentence on how the headline was combined.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypedDict

__all__ = [
    "EVIDENCE_KINDS",
    "EvidenceCell",
    "EvidenceColumn",
    "Leaderboard",
    "LeaderboardRow",
    "build_leaderboard",
    "leaderboard",
    "tiers_line",
]

EvidenceKind = Literal["judged", "checks", "pass@1", "pass@k", "gold", "labels"]
#: the kinds of evidence, in the order their columns are shown
EVIDENCE_KINDS: tuple[EvidenceKind, ...] = ("judged", "checks", "pass@1", "pass@k", "gold", "labels")


class EvidenceColumn(TypedDict):
    """One column of evidence."""

    key: str  #: the key of this column in each row's ``evidence``: "judged", "checks", "pass@1", "pass@5", ...
    kind: EvidenceKind
    title: str  #: the column heading, e.g. "judged", "checks", "pass@1", "pass@5", "gold"
    #: True: it counts in the headline (the rubric asks for it); False: reported beside it
    in_headline: bool


class EvidenceCell(TypedDict):
    """A student's value in one evidence column, in [0, 1]."""

    score: float | None
    ci: list[float | None]  #: [low, high]; [None, None] where no interval is shown
    n: int  #: the datapoints (answers for pass rates) behind it


class LeaderboardRow(TypedDict):
    student: str
    rank: int | None  #: the place of its headline score (None: unscored)
    rank_range: list[int] | None  #: [best, worst] place the data allows; None: unscored or no interval
    rank_label: str  #: "1", "2-4", "—"
    headline: float | None  #: in [0, 1]
    headline_ci: list[float | None]  #: [low, high], in [0, 1]
    #: False: its place rests on evidence that cannot settle it (see ``not_determined``)
    determined: bool | None
    not_determined: str | None
    evidence: dict[str, EvidenceCell]  #: column key -> cell (absent where the student has none)


class Leaderboard(TypedDict):
    columns: list[EvidenceColumn]
    rows: list[LeaderboardRow]  #: best first; unscored students last
    tiers: list[list[str]]  #: students that cannot be told apart, best tier first
    tiers_line: str  #: "A; then B, C and D, not separable; then E"
    combined: str  #: one sentence: how the headline was combined from the evidence
    level: float  #: the level of every interval
    intervals: bool  #: False: too few datapoints for any interval or rank range


def _join(names: Sequence[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return f"{', '.join(names[:-1])} and {names[-1]}"


def tiers_line(tiers: Sequence[Sequence[str]]) -> str:
    """"A; then B, C and D, not separable; then E" from tiers best first."""
    parts = []
    for k, tier in enumerate(tiers):
        text = _join(list(tier))
        if len(tier) > 1:
            text += ", not separable"
        parts.append(text if k == 0 else f"then {text}")
    return "; ".join(parts)


def tiers_of(order: Sequence[str], separated: Mapping[tuple[str, str], bool]) -> list[list[str]]:
    """Students in headline order cut into tiers. A cut falls between two neighbours only
    where every student above it is told apart from (significantly above) every student
    below it, so a tier line never claims a separation the comparisons do not make."""
    tiers: list[list[str]] = []
    current: list[str] = []
    for k, s in enumerate(order):
        current.append(s)
        below = order[k + 1 :]
        above = order[: k + 1]
        if below and all(separated.get((a, b), False) for a in above for b in below):
            tiers.append(current)
            current = []
    if current:
        tiers.append(current)
    return tiers


def build_leaderboard(
    rows: list[LeaderboardRow],
    columns: list[EvidenceColumn],
    separated: Mapping[tuple[str, str], bool],
    combined: str,
    level: float,
    intervals: bool,
) -> Leaderboard:
    """The leaderboard from its rows (best first) and which pairs (a above b) are told apart."""
    order = [r["student"] for r in rows if r["headline"] is not None]
    tiers = tiers_of(order, separated) if intervals else ([order] if order else [])
    return Leaderboard(columns=columns, rows=rows, tiers=tiers, tiers_line=tiers_line(tiers),
                       combined=combined, level=level, intervals=intervals)  # fmt: skip


def leaderboard(summary: Mapping[str, Any]) -> Leaderboard:
    """The leaderboard of an analysis: ``summary`` is ``Analysis.summary`` or a loaded
    ``summary.json`` (schema 3 or later carries it under ``leaderboard``)."""
    board = summary.get("leaderboard")
    if not isinstance(board, Mapping):
        raise ValueError("this summary has no leaderboard (written before schema_version 3): run coeval analyze again")
    return Leaderboard(columns=list(board["columns"]), rows=list(board["rows"]), tiers=list(board["tiers"]),
                       tiers_line=str(board["tiers_line"]), combined=str(board["combined"]),
                       level=float(board["level"]), intervals=bool(board["intervals"]))  # fmt: skip
