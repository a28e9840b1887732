"""The ``coeval status`` table of a run's lanes (``lanes.json``, see :mod:`coeval.run.lane_figures`)."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

__all__ = ["lanes_table"]

_COLUMNS = ("phase / lane", "models", "calls", "limit", "peak", "p50 ms", "p95 ms", "down")


def _ms(value: Any) -> str:
    return "" if not isinstance(value, int | float) else f"{value:.0f}"


def _rows(entry: Any) -> list[dict[str, Any]]:
    rows = entry.get("lanes") if isinstance(entry, dict) else None
    return [row for row in rows if isinstance(row, dict)] if isinstance(rows, list) else []


def lanes_table(lanes: dict[str, Any]) -> Table | None:
    """Per phase, one row per lane (endpoint or replica): models, calls, final limit (``~``:
    set by latency, a self-hosted server), peak in flight, latency p50/p95, times down.
    None when the run has no lane figures (older runs, batch only)."""
    table = Table(title="lanes (per endpoint or replica, at the end of each phase)")
    for col in _COLUMNS:
        text = col in ("phase / lane", "models")
        table.add_column(col, justify="left" if text else "right", overflow="fold", no_wrap=not text)
    for phase, entry in (lanes.get("phases") or {}).items():
        rows = _rows(entry)
        if not rows:
            continue
        table.add_row(Text(str(phase), style="bold"))
        for row in rows:
            mode = "~" if row.get("queue_aware") else ""
            table.add_row(Text(f"  {row.get('url', '')}"), ", ".join(map(str, row.get("models") or [])),
                          str(row.get("calls", "")), f"{row.get('final_limit', '')}{mode}",
                          str(row.get("peak_in_flight", "")), _ms(row.get("latency_p50_ms")),
                          _ms(row.get("latency_p95_ms")), str(row.get("ejections", 0)))
    return table if table.row_count else None
