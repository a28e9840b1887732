"""Judges whose replies look degenerate: the same level for every factor of an answer.

A judge that gives every factor the same level on more than ``DEGENERATE_SHARE`` of the
answers it scored (with two factors or more) is flagged; ``degenerate_rate`` is that share.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["DEGENERATE_SHARE", "degenerate_rates", "with_degenerate_rates"]

#: Share of answers above which a judge's flat scoring is flagged.
DEGENERATE_SHARE = 0.9


def degenerate_rates(units: pd.DataFrame) -> dict[str, float | None]:
    """judge -> share of its multi-factor scorings with one level for every factor (None
    when it scored no answer on two factors or more)."""
    if units is None or not len(units) or "judge" not in units:
        return {}
    graded = units[units["level"] >= 0]
    per = graded.groupby(["judge", "response"], observed=True)["level"].agg(["nunique", "size"])
    per = per[per["size"] >= 2]
    out: dict[str, float | None] = {}
    for judge, group in per.groupby(level="judge", observed=True):
        out[str(judge)] = float((group["nunique"] == 1).mean()) if len(group) else None
    return out


def with_degenerate_rates(judges: Any, units: pd.DataFrame) -> Any:
    """The summary's judges with ``degenerate_rate`` and ``degenerate`` added (dict form only)."""
    if not isinstance(judges, dict):
        return judges
    rates = degenerate_rates(units)
    out = {}
    for name, entry in judges.items():
        rate = rates.get(str(name))
        extra = {"degenerate_rate": rate, "degenerate": rate is not None and rate > DEGENERATE_SHARE}
        out[name] = {**entry, **extra} if isinstance(entry, dict) else entry
    return out
