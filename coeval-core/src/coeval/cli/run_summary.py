"""``coeval run --json``: one machine-readable summary on stdout when the run ends.

Scripts and CI read this instead of scraping the console (which goes to stderr).
"""

from __future__ import annotations

import json
from typing import Any

from coeval.run.limits import LIMIT_KEY
from coeval.storage.run_folder import RunFolder

__all__ = ["run_summary", "run_summary_json"]


def run_summary(result: Any) -> dict[str, Any]:
    """Status, per-phase counts of this process, and the folder's calls and spend so far."""
    run = RunFolder(result.run_folder)
    meta = run.read_meta() if run.exists() else {}
    phases = {name: phase.to_log() for name, phase in (result.phases or {}).items()}
    spend = meta.get("spend_usd") or {}
    return {
        "status": result.status,
        "exit_code": result.exit_code,
        "run_folder": str(result.run_folder),
        "message": result.message,
        "phases": phases,
        "phases_completed": list(meta.get("phases_completed") or []),
        "calls": dict(meta.get("calls") or {}),
        "spend_usd": round(float(sum(spend.values())), 6),
        #: ``{"datapoints_per_task_teacher": N, "full_totals": {...}}`` after a ``--limit`` slice
        "limit": meta.get(LIMIT_KEY),
        "next": f"coeval analyze --run {result.run_folder}",
    }


def run_summary_json(result: Any) -> str:
    return json.dumps(run_summary(result), indent=2, sort_keys=False, default=str)
