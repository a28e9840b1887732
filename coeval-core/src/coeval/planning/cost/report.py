"""Showing an estimate: rich tables on the terminal, ``cost_estimate.json`` on disk."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from coeval.console import output_console
from coeval.planning.cost.estimate import CostEstimate
from coeval.storage.run_folder import atomic_write_json

__all__ = [
    "ESTIMATE_FILE",
    "format_duration",
    "format_estimate",
    "format_time_range",
    "format_total_time",
    "planned_phase_seconds",
    "print_estimate",
    "read_estimate",
    "write_estimate",
]

ESTIMATE_FILE = "cost_estimate.json"


def format_duration(seconds: float) -> str:
    if seconds < 1:
        return "< 1 s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def format_time_range(low: float, high: float) -> str:
    """``2-20 min``: a range in the unit of its upper end (``< 1 s`` when both are)."""
    if high < 1:
        return "< 1 s"
    if high < 90:
        return f"{low:.0f}-{high:.0f} s"
    if high < 5400:
        return f"{low / 60:.0f}-{high / 60:.0f} min"
    return f"{low / 3600:.1f}-{high / 3600:.1f} h"


def format_total_time(estimate: CostEstimate) -> str:
    """The estimate's time: one number where its basis is firm, a range where it is weak."""
    if estimate.basis.weak:
        return format_time_range(*estimate.seconds_range)
    return format_duration(estimate.seconds)


def _usd(value: float, complete: bool = True) -> str:
    text = f"${value:,.4f}" if value < 1 else f"${value:,.2f}"
    return text if complete else f"{text}+"


def print_estimate(estimate: CostEstimate, console: Any = None) -> None:
    console = console or output_console()
    style: dict[str, Any] = {"title_justify": "left", "box": box.SIMPLE_HEAD}
    what = "remaining work" if estimate.remaining_only else "full run"
    basis = (
        f"{estimate.sample_calls} sample calls" if estimate.sample_calls else "heuristics, no sample calls"
    )
    phases = Table(title=f"Cost estimate: {estimate.plan.experiment_id} ({what}; {basis})", **style)
    for col in ("phase", "calls", "input tokens", "output tokens", "cost", "time"):
        phases.add_column(col, justify="left" if col == "phase" else "right")
    for phase, row in estimate.by_phase().items():
        time = (
            "batch"
            if row["batch_calls"] and row["batch_calls"] == row["calls"]
            else format_duration(row["seconds"])
        )
        phases.add_row(
            estimate.plan.short(phase),
            f"{row['calls']:,}",
            f"{row['input_tokens']:,}",
            f"{row['output_tokens']:,}",
            _usd(row["cost_usd"], row["cost_complete"]),
            time if row["calls"] else "-",
        )
    if estimate.pipelined_overlap_s >= 0.5:
        phases.add_row("phases 3-5 at once", "", "", "", "", f"-{format_duration(estimate.pipelined_overlap_s)}")
    total = estimate.total
    phases.add_row(
        "total",
        f"{total['calls']:,}",
        f"{total['input_tokens']:,}",
        f"{total['output_tokens']:,}",
        _usd(total["cost_usd"], total["cost_complete"]),
        format_total_time(estimate),
        style="bold",
    )
    console.print(phases)
    if estimate.seconds:
        low, high = estimate.seconds_range
        console.print(f"time: {estimate.time_basis} (the run may take {format_time_range(low, high)})",
                      highlight=False)

    models = Table(title="Per model", **style)
    for col in ("model", "interface", "in $/1M", "out $/1M", "batch", "calls", "tokens", "cost", "basis"):
        models.add_column(
            col, justify="right" if col in ("in $/1M", "out $/1M", "calls", "tokens", "cost") else "left"
        )
    plans = {m.name: m for m in estimate.plan.models}
    for name, row in estimate.by_model().items():
        price = row["price_per_1m"]
        tokens = row["input_tokens"] + row["output_tokens"]
        models.add_row(
            name,
            plans[name].interface_label,
            f"{price['input']:g}" if price else "?",
            f"{price['output']:g}" if price else "?",
            f"x{price['batch_discount']:g}" if price and row["batch_phases"] else "-",
            f"{row['calls']:,}",
            f"{tokens:,}",
            _usd(row["cost_usd"]) if price else "unknown",
            ", ".join(row["sources"]) or "-",
        )
    console.print(models)
    for note in estimate.notes:
        console.print(f"note: {note}", highlight=False)


def format_estimate(estimate: CostEstimate, width: int = 110) -> str:
    buffer = io.StringIO()
    print_estimate(
        estimate, Console(file=buffer, width=width, color_system=None, force_terminal=False, highlight=False)
    )
    return buffer.getvalue()


def write_estimate(estimate: CostEstimate, path: str | Path) -> Path:
    """Write the JSON form atomically; returns the path."""
    target = Path(path)
    atomic_write_json(target, estimate.to_dict())
    return target


def read_estimate(run_root: str | Path) -> dict[str, Any] | None:
    """The ``cost_estimate.json`` of a run folder (for ``coeval status`` to show the estimate
    beside the spend in ``meta.json``), or None when there is none or it cannot be read."""
    try:
        data = json.loads((Path(run_root) / ESTIMATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def planned_phase_seconds(run_root: str | Path) -> dict[str, float]:
    """phase -> the seconds the run folder's ``cost_estimate.json`` gave it (the progress
    bars' ETA until a phase's recent rate is known); empty without an estimate."""
    phases = (read_estimate(run_root) or {}).get("phases")
    if not isinstance(phases, dict):
        return {}
    return {str(p): float(row["seconds"]) for p, row in phases.items()
            if isinstance(row, dict) and isinstance(row.get("seconds"), int | float) and row["seconds"] > 0}
