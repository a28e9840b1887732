"""The rows of the report's data-quality table, in words.

``summary.json`` keeps the field names (``n_superseded_failures``) for programs; a reader of
the report gets a sentence saying what was counted and what happened to it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DATA_QUALITY_LABELS", "PHASE_LABELS", "quality_rows"]

#: ``data_quality`` field -> label (phase-5 judge records unless named otherwise)
DATA_QUALITY_LABELS: dict[str, str] = {
    "n_records": "judge records read",
    "n_bad_lines": "unreadable lines (cut-off writes), not used",
    "n_duplicates": "older records of a repeated id, not used (the last valid one counts)",
    "n_superseded_failures": "of those, failed attempts that a later record redid",
    "n_failed": "failed judge records (judge failures, never scored as Low)",
    "n_orphaned": "records whose answer or student is unknown, not used",
    "n_incomplete": "answer-judge pairs missing some rubric factor",
    "n_invalid_scores": "scores neither High/Medium/Low nor a number in [0, 1], not used",
    "n_unknown_factor_scores": "scores of factors not in the task's rubric, not used",
    "n_duplicate_scores": "factors scored twice for one answer and judge (the last counts)",
    "n_failed_responses_scored": "scores of answers whose phase-4 record failed",
    "n_left_out_by_config": "records of models the run's config no longer has in that role, or of datapoints above its sampling.total, not used",
}

#: per-phase counts of datapoints (phase 3) and responses (phase 4)
PHASE_LABELS: dict[str, str] = {
    "n_records": "records read",
    "n_bad_lines": "unreadable lines",
    "n_duplicates": "older records of a repeated id",
    "n_failed": "failed records",
}

_PHASES = {"datapoints": "datapoints (phase 3)", "responses": "answers (phase 4)"}
_BREAKDOWNS = {
    "missing_factors": "missing rubric factor",
    "unknown_factors": "factor not in the rubric",
    "invalid_values": "invalid score value",
}


def _fallback(key: str) -> str:
    """A field without a label yet (a newer loader): its name, in words."""
    return key.removeprefix("n_").replace("_", " ")


def quality_rows(data_quality: dict[str, Any]) -> list[dict[str, Any]]:
    """``[{"what": label, "count": n}, ...]`` for ``summary["data_quality"]``."""
    rows = [
        {"what": DATA_QUALITY_LABELS.get(k, _fallback(k)), "count": v}
        for k, v in data_quality.items()
        if not isinstance(v, dict)
    ]
    for phase, title in _PHASES.items():
        for k, v in (data_quality.get(phase) or {}).items():
            rows.append({"what": f"{title}: {PHASE_LABELS.get(k, _fallback(k))}", "count": v})
    for field, title in _BREAKDOWNS.items():
        for k, v in (data_quality.get(field) or {}).items():
            rows.append({"what": f"{title}: {k}", "count": v})
    return rows
