"""Judges whose replies look degenerate, and leaving them out of the ranking on request.

A reply is degenerate when it gives every factor of an answer the same level (two factors
or more) without a reason (an empty or missing ``rationale``), or when it copies the judge
prompt's own example. A judge is flagged when more than ``DEGENERATE_SHARE`` of its replies
are degenerate; ``degenerate_rate`` is that share. Records without a ``rationale`` field
(older runs) count a flat reply as unexplained.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pandas as pd

from coeval_analysis.loading.run_data import RunData

__all__ = ["DEGENERATE_SHARE", "degenerate_rates", "drop_judges", "dropped_entries", "with_degenerate_rates"]

#: Share of a judge's replies above which it is flagged (and dropped on request).
DEGENERATE_SHARE = 0.5


def _pairs(units: pd.DataFrame) -> pd.DataFrame:
    """Per (judge, response) scored on two factors or more: ``flat`` (one level for all)."""
    graded = units[units["level"] >= 0]
    # one level for all is lowest == highest: a pandas nunique per group took three times as long
    per = graded.groupby(["judge", "response"], observed=True)["level"].agg(["min", "max", "size"])
    per = per[per["size"] >= 2]
    return pd.DataFrame(
        {
            "judge": per.index.get_level_values("judge").astype(str),
            "response": per.index.get_level_values("response"),
            "flat": (per["min"] == per["max"]).to_numpy(),
        }
    )


def degenerate_rates(units: pd.DataFrame, replies: pd.DataFrame | None = None) -> dict[str, float | None]:
    """judge -> share of its replies that are degenerate (None when there is none to judge).

    ``replies`` (from :func:`coeval_analysis.warnings.judge_replies.judge_replies`): per (judge,
    response), whether the reply ``explained`` itself and whether it ``copied`` the example."""
    if units is None or not len(units) or "judge" not in units:
        return {}
    pairs = _pairs(units)
    if replies is not None and len(replies):
        flags = replies.assign(judge=replies["judge"].astype(str))[["judge", "response", "explained", "copied"]]
        pairs = pairs.merge(flags, on=["judge", "response"], how="outer")
        copied = pairs["copied"].fillna(False).astype(bool)
        pairs = pairs[pairs["flat"].notna() | copied]
        flat = pairs["flat"].fillna(False).astype(bool)
        explained = pairs["explained"].fillna(False).astype(bool)
        pairs = pairs.assign(bad=(flat & ~explained) | copied[pairs.index])
    else:
        pairs = pairs.assign(bad=pairs["flat"])
    out: dict[str, float | None] = {}
    for judge, group in pairs.groupby("judge"):
        out[str(judge)] = float(group["bad"].mean()) if len(group) else None
    return out


def with_degenerate_rates(judges: Any, rates: Mapping[str, float | None]) -> Any:
    """The summary's judges with ``degenerate_rate`` and ``degenerate`` added (dict form only),
    from :func:`degenerate_rates` (a judge's rate does not depend on the others, so the rates
    made before degenerate judges were dropped serve the judges kept)."""
    if not isinstance(judges, dict):
        return judges
    out = {}
    for name, entry in judges.items():
        rate = rates.get(str(name))
        extra = {"degenerate_rate": rate, "degenerate": rate is not None and rate > DEGENERATE_SHARE}
        out[name] = {**entry, **extra} if isinstance(entry, dict) else entry
    return out


def drop_judges(data: RunData, rates: dict[str, float | None]) -> tuple[RunData, list[str]]:
    """The run without the judges flagged degenerate, and their names (sorted)."""
    gone = sorted(j for j, r in rates.items() if r is not None and r > DEGENERATE_SHARE)
    if not gone:
        return data, []
    keep_units = ~data.units["judge"].astype(str).isin(gone).to_numpy()
    keep_recs = ~data.records["judge"].astype(str).isin(gone).to_numpy()
    units = data.units[keep_units].reset_index(drop=True)
    records = data.records[keep_recs].reset_index(drop=True)
    return replace(data, units=units, records=records), gone


def dropped_entries(gone: list[str], rates: dict[str, float | None],
                    facts: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Summary ``judges`` entries and ``warnings`` for the judges left out of the ranking;
    ``facts``: each judge's record counts (read, then left out), as a kept judge's entry has."""
    judges = {j: {**facts.get(j, {}), "degenerate_rate": rates[j], "degenerate": True, "dropped": True} for j in gone}
    warnings = [
        {
            "kind": "degenerate_judge_dropped",
            "subject": j,
            "message": (
                f"judge {j} left out of the ranking: {rates[j]:.0%} of its replies are degenerate "
                f"(one level for every factor without a reason, or the prompt's example copied; "
                f"threshold {DEGENERATE_SHARE:.0%})"
            ),
        }
        for j in gone
    ]
    return judges, warnings
