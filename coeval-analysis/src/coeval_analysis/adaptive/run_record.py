"""What ``coeval analyze`` says of an adaptive run, from the decisions ``meta.json`` records.

An adaptive run did not buy the full grid: the judges screened out after the calibration
slice graded only the slice, and the students let go at a look were judged no further. The
headline refit on such a run reads those absent judgments as if the grid were whole, so the
analysis says which judges were screened out and why, that their judgments are absent by
design, and gives the design's own ranking: the one recorded at the look where the run
ended, refit on every judgment bought (:mod:`~coeval_analysis.adaptive.refit`), with
intervals at that look's share of alpha. The looks decided on the calibration slice's
weights, with intervals valid under the stopping.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["adaptive_console_lines", "adaptive_summary", "adaptive_warnings", "with_adaptive"]


def adaptive_summary(meta: Mapping[str, Any]) -> dict[str, Any] | None:
    """summary.json's ``adaptive``: the screening, looks, stop and calls; None: not adaptive."""
    record = meta.get("adaptive")
    if not isinstance(record, Mapping):
        return None
    looks = [x for x in record.get("looks") or [] if isinstance(x, Mapping)]
    last = looks[-1] if looks else {}
    found = last.get("scores")
    scores: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    ranking = sorted(
        ({"student": s, "score": v[0], "ci_low": v[1], "ci_high": v[2]} for s, v in scores.items()
         if isinstance(v, list | tuple) and len(v) == 3),
        key=lambda row: -float(row["score"]),
    )
    screening = [dict(j) for j in record.get("screening") or [] if isinstance(j, Mapping)]
    return {
        "settings": dict(record.get("settings") or {}),
        "question": record.get("question"),
        "finished": bool(record.get("finished")),
        "stop_reason": record.get("stop_reason"),
        "screening": screening,
        "stopped_judges": [j["judge"] for j in screening if j.get("stopped")],
        "looks": [dict(x) for x in looks],
        "planned_calls": record.get("planned_calls"),
        "made_calls": record.get("made_calls"),
        "saved_calls": record.get("saved_calls"),
        "ranking": ranking,
        "ranking_level": 1 - float(last["alpha"]) if isinstance(last.get("alpha"), int | float) else None,
        "intervals": "the design's, at the stopping look's share of alpha (spent over a fixed number of looks), "
                     "weights refit on every judgment bought",
    }


def with_adaptive(summary: dict[str, Any], meta: Mapping[str, Any]) -> None:
    """Add an adaptive run's ``adaptive`` to ``summary`` and its warning first among the warnings."""
    adaptive = adaptive_summary(meta)
    if adaptive is not None:
        summary["adaptive"] = adaptive
        summary["warnings"] = adaptive_warnings(adaptive) + list(summary.get("warnings") or [])


def adaptive_warnings(adaptive: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The warning that leads an adaptive run's analysis."""
    stopped = [j for j in adaptive.get("screening") or [] if j.get("stopped")]
    if stopped:
        why = "; ".join(f"{j['judge']} (agreement {_num(j.get('agreement'))}, 95% bound {_num(j.get('bound'))})"
                        for j in stopped)
        skipped = (f"judges screened out after the calibration slice: {why}, below the 0.25 a judge needs to tell "
                   "answers apart; their judgments after the slice are absent by design, not missing")
    else:
        skipped = "no judge was screened out"
    planned, made = adaptive.get("planned_calls"), adaptive.get("made_calls")
    calls = f"; {made} of {planned} phase-5 calls made" if isinstance(planned, int) and isinstance(made, int) else ""
    message = (f"adaptive run ({adaptive.get('stop_reason') or 'not finished'}): {skipped}{calls}. Read its ranking "
               "with the design's stopping-valid intervals (summary.json adaptive.ranking), not as a full grid")
    return [{"kind": "adaptive_design", "subject": None, "message": message}]


def adaptive_console_lines(adaptive: Mapping[str, Any] | None) -> list[str]:
    """The design's ranking, for the console of ``coeval analyze``."""
    if not adaptive or not adaptive.get("ranking"):
        return []
    level = adaptive.get("ranking_level")
    weights = "weights refit on every judgment bought"
    head = f"Adaptive design's ranking ({level:.1%} intervals at the stopping look, {weights}):" \
        if isinstance(level, float) else f"Adaptive design's ranking ({weights}):"
    lines = [head]
    for place, row in enumerate(adaptive["ranking"], 1):
        lines.append(f"  {place}. {row['student']}  {row['score']:+.3f}  [{row['ci_low']:+.3f}, {row['ci_high']:+.3f}]")
    return lines


def _num(value: Any) -> str:
    return "?" if not isinstance(value, int | float) or math.isnan(float(value)) else f"{float(value):.2f}"
