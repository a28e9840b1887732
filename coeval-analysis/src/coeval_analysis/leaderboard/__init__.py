"""The leaderboard: the one ranking every surface shows (console, report, viewer, export).
:mod:`.board` says what it holds and reads it from a summary (``from
coeval_analysis.leaderboard import leaderboard``, kept here as the public path), :mod:`.build`
builds it from the numbers ``analyze`` has put in the summary, :mod:`.view` formats its
cells once for every surface, and :mod:`.verdict` prints it as ``coeval analyze``'s verdict:
the leaderboard, the tiers and the first warnings.
"""

from __future__ import annotations

from coeval_analysis.leaderboard.board import (
    EVIDENCE_KINDS,
    EvidenceCell,
    EvidenceColumn,
    EvidenceKind,
    Leaderboard,
    LeaderboardRow,
    build_leaderboard,
    leaderboard,
    tiers_line,
    tiers_of,
)

__all__ = [
    "EVIDENCE_KINDS",
    "EvidenceCell",
    "EvidenceColumn",
    "EvidenceKind",
    "Leaderboard",
    "LeaderboardRow",
    "build_leaderboard",
    "leaderboard",
    "tiers_line",
    "tiers_of",
]
