"""The pre-run estimate set against what the run did (``coeval status``).

Estimated figures come from the run folder's ``cost_estimate.json``; actual ones from
``meta.json`` (calls, ``spend_usd``, the runs' start and end times) and the records' usage
(tokens, as :func:`coeval.planning.call_figures.call_figures` sums them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.table import Table

from coeval.planning.cost.report import format_duration
from coeval.storage.run_folder import parse_stamp

__all__ = ["ROWS", "against_table", "estimate_against_actual", "run_seconds"]

#: key -> label, in the order the table shows them
ROWS = {
    "calls": "calls",
    "input_tokens": "input tokens",
    "output_tokens": "output tokens",
    "cost_usd": "cost $",
    "seconds": "time",
}


def run_seconds(meta: Mapping[str, Any]) -> float | None:
    """Wall time of the folder's runs (``meta.json`` ``runs``: each finished run's start to
    end, summed); None when no run has both times."""
    total, seen = 0.0, False
    for entry in meta.get("runs") or []:
        if not isinstance(entry, Mapping):
            continue
        start, end = parse_stamp(entry.get("started_at")), parse_stamp(entry.get("finished_at"))
        if start is not None and end is not None and end >= start:
            total += (end - start).total_seconds()
            seen = True
    return total if seen else None


def estimate_against_actual(
    estimate: Mapping[str, Any], meta: Mapping[str, Any], figures: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, float | int | None]]:
    """``{row: {"estimated": x, "actual": y}}`` for the :data:`ROWS`."""
    calls = meta.get("calls") or {}
    spend = meta.get("spend_usd") or {}
    return {
        "calls": {"estimated": estimate.get("total_calls"), "actual": sum(int(v) for v in calls.values())},
        "input_tokens": {
            "estimated": estimate.get("total_input_tokens"),
            "actual": sum(int(f.get("input_tokens") or 0) for f in figures.values()),
        },
        "output_tokens": {
            "estimated": estimate.get("total_output_tokens"),
            "actual": sum(int(f.get("output_tokens") or 0) for f in figures.values()),
        },
        "cost_usd": {
            "estimated": estimate.get("total_cost_usd"),
            "actual": round(sum(float(v) for v in spend.values()), 6),
        },
        "seconds": {"estimated": estimate.get("estimated_seconds"), "actual": run_seconds(meta)},
    }


def _show(key: str, value: Any) -> str:
    if not isinstance(value, int | float):
        return "-"
    if key == "seconds":
        return format_duration(float(value))
    if key == "cost_usd":
        return f"{value:,.4f}"
    return f"{round(value):,}"


def against_table(rows: Mapping[str, Mapping[str, Any]], title: str) -> Table:
    """``estimated / actual`` with the ratio actual / estimated."""
    table = Table(title=title)
    for col in ("", "estimated", "actual", "actual / est."):
        table.add_column(col, justify="left" if not col else "right")
    for key, label in ROWS.items():
        row = rows.get(key) or {}
        est, act = row.get("estimated"), row.get("actual")
        ratio = f"{act / est:.2f}" if isinstance(est, int | float) and isinstance(act, int | float) and est else "-"
        table.add_row(label, _show(key, est), _show(key, act), ratio)
    return table
