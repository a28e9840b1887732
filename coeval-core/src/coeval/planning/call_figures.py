"""Per-model call figures for ``coeval status``: calls, tokens in and out, cost, latency
p50/p95 and generation speed, read from the records (``latency_ms``/``tokens_per_s`` where
a record has them; legacy records without them just leave those columns empty)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from rich.table import Table

from coeval.phase_ids import CALLER_FIELDS
from coeval.record_schema import ATTEMPTS, COST_USD, LATENCY_MS, TOKENS_PER_S, USAGE
from coeval.storage import iter_jsonl

__all__ = ["call_figures", "figures_table"]

#: phase -> the record field naming the model that made the call
_CALLER = CALLER_FIELDS


def _percentile(values: list[float], share: float) -> float | None:
    """Nearest-rank percentile (no interpolation: a value that was really measured)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-int(share * 100) * len(ordered) // 100))
    return ordered[min(rank, len(ordered)) - 1]


def call_figures(run: Any) -> dict[str, dict[str, Any]]:
    """model -> {calls, input_tokens, output_tokens, cost_usd, latency_p50_ms, latency_p95_ms, tokens_per_s}."""
    sums: dict[str, dict[str, Any]] = defaultdict(lambda: {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0})
    latencies: dict[str, list[float]] = defaultdict(list)
    speeds: dict[str, list[float]] = defaultdict(list)
    for phase, field in _CALLER.items():
        for path in run.jsonl_files(phase):
            for rec in iter_jsonl(path, on_bad_line=lambda _n, _t: None):
                usage, model = rec.get(USAGE), rec.get(field)
                if not isinstance(usage, dict) or not isinstance(model, str):
                    continue
                row = sums[model]
                row["calls"] += int(rec.get(ATTEMPTS) or 1)
                row["input_tokens"] += int(usage.get("input_tokens") or 0)
                row["output_tokens"] += int(usage.get("output_tokens") or 0)
                row["cost_usd"] += float(rec.get(COST_USD) or 0.0)
                if isinstance(rec.get(LATENCY_MS), int | float):
                    latencies[model].append(float(rec[LATENCY_MS]))
                if isinstance(rec.get(TOKENS_PER_S), int | float):
                    speeds[model].append(float(rec[TOKENS_PER_S]))
    for model, row in sums.items():
        row["cost_usd"] = round(row["cost_usd"], 6)
        row["latency_p50_ms"] = _percentile(latencies[model], 0.50)
        row["latency_p95_ms"] = _percentile(latencies[model], 0.95)
        row["tokens_per_s"] = round(sum(speeds[model]) / len(speeds[model]), 1) if speeds[model] else None
    return dict(sums)


def figures_table(figures: dict[str, dict[str, Any]]) -> Table:
    """The ``coeval status`` table of :func:`call_figures`."""
    table = Table(title="calls per model (from records)")
    for col in ("model", "calls", "tokens in", "tokens out", "cost $", "p50 ms", "p95 ms", "tok/s"):
        table.add_column(col, justify="left" if col == "model" else "right")
    for model, f in sorted(figures.items()):
        def show(v: Any, fmt: str = "{:.0f}") -> str:
            return "" if v is None else fmt.format(v)

        table.add_row(model, str(f["calls"]), str(f["input_tokens"]), str(f["output_tokens"]), f"{f['cost_usd']:.4f}",
                      show(f["latency_p50_ms"]), show(f["latency_p95_ms"]), show(f["tokens_per_s"], "{:.1f}"))
    return table
