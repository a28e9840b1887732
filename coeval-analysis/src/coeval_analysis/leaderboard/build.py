"""The leaderboard from the numbers ``analyze`` has already put in the summary: the
headline per student, its comparisons, the pass rates and gold. Nothing is recomputed."""

from __future__ import annotations

from typing import Any

from coeval_analysis.leaderboard.board import (
    EvidenceCell,
    EvidenceColumn,
    Leaderboard,
    LeaderboardRow,
    build_leaderboard,
)

__all__ = ["leaderboard_of"]


def _cell(score: Any, ci: Any, n: Any) -> EvidenceCell:
    bounds = list(ci) if isinstance(ci, list | tuple) and len(ci) == 2 else [None, None]
    return EvidenceCell(score=score, ci=bounds, n=int(n or 0))


def _columns(summary: dict[str, Any]) -> tuple[list[EvidenceColumn], dict[str, dict[str, EvidenceCell]]]:
    """(columns, student -> column key -> cell) from the summary's evidence sections."""
    columns: list[EvidenceColumn] = []
    cells: dict[str, dict[str, EvidenceCell]] = {}
    for key, kind, title, in_headline, per_student in _evidence(summary):
        if not per_student:
            continue
        columns.append(EvidenceColumn(key=key, kind=kind, title=title, in_headline=in_headline))  # type: ignore[typeddict-item]
        for student, cell in per_student.items():
            cells.setdefault(student, {})[key] = cell
    return columns, cells


def _evidence(summary: dict[str, Any]) -> list[tuple[str, str, str, bool, dict[str, EvidenceCell]]]:
    blocks = summary.get("headline_evidence") or {}
    out = []
    for entry in blocks.get("columns", []):
        per = {s: _cell(v.get("score"), v.get("ci"), v.get("n")) for s, v in entry["students"].items()}
        out.append((entry["key"], entry["kind"], entry["title"], bool(entry["in_headline"]), per))
    return out


def leaderboard_of(summary: dict[str, Any], level: float, intervals: bool) -> Leaderboard:
    """The leaderboard of a summary that has ``students`` (headline and rank range per
    student), ``comparisons`` and ``headline_evidence`` (the evidence columns)."""
    columns, cells = _columns(summary)
    rows: list[LeaderboardRow] = []
    for name, s in summary["students"].items():
        score = s.get("headline_score", s.get("robust_score"))
        ci = s.get("headline_ci", s.get("robust_ci")) or [None, None]
        rows.append(
            LeaderboardRow(
                student=name,
                rank=s.get("headline_rank", s.get("robust_rank")),
                rank_range=s.get("rank_range"),
                rank_label=s.get("rank_label") or "—",
                headline=score,
                headline_ci=list(ci),
                determined=s.get("determined"),
                not_determined=s.get("not_determined"),
                evidence=cells.get(name, {}),
            )
        )
    separated = {
        (p["a"], p["b"]): bool(p["ci"][0] is not None and p["ci"][0] > 0) for p in summary.get("comparisons", [])
    }
    combined = str((summary.get("headline_evidence") or {}).get("combined") or "")
    return build_leaderboard(rows, columns, separated, combined, level, intervals)
