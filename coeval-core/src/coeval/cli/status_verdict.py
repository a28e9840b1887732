"""The one-word verdict of ``coeval status``, checked against what the folder holds.

``meta.json`` says how the last process ended; the phase surveys say what the records
are. A run recorded ``completed`` whose surveys find gaps (records removed or repaired
since, a partial run) is reported ``incomplete``, with a note naming the phases, so the
verdict never contradicts the table under it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["survey_verdict"]


def survey_verdict(recorded: str, phases: list[dict[str, Any]]) -> tuple[str, str | None]:
    """``(verdict, note)`` from the recorded status and the surveyed phases (entries of
    ``collect_status``'s ``phases``; those without a survey are not judged)."""
    surveyed = [p for p in phases if "complete" in p]
    gaps = [p for p in surveyed if not p["complete"]]
    if recorded != "completed" or not gaps:
        return recorded, None
    parts = []
    for p in gaps:
        total = p.get("total") or {}
        missing, failed = int(total.get("missing", 0)), int(total.get("failed", 0))
        counts = ", ".join(f"{n} {what}" for n, what in ((missing, "missing"), (failed, "failed")) if n)
        parts.append(f"{p['phase']} ({counts})" if counts else p["phase"])
    note = (
        "recorded as completed, but these phases have gaps: "
        + "; ".join(parts)
        + ". `coeval run --config <your config> --continue` fills them"
    )
    return "incomplete", note
