"""``coeval run --json``: one machine-readable summary on stdout when the run ends.

Scripts and CI read this instead of scraping the console (which goes to stderr).
"""

from __future__ import annotations

import json
from typing import Any

from coeval.run.limits import LIMIT_KEY
from coeval.storage.call_ledger import ledger_path, read_ledger
from coeval.storage.run_folder import RunFolder

__all__ = ["run_summary", "run_summary_json"]


def run_summary(result: Any) -> dict[str, Any]:
    """Status, per-phase counts of this process, and the folder's calls and spend so far."""
    run = RunFolder(result.run_folder)
    try:
        meta = run.read_meta() if run.exists() else {}
    except ValueError:  # unreadable: the run said so; the ledger still counts
        meta = {}
    phases = {name: phase.to_log() for name, phase in (result.phases or {}).items()}
    calls, spend = _counts(run, meta)
    return {
        "status": result.status,
        "exit_code": result.exit_code,
        "run_folder": str(result.run_folder),
        "message": result.message,
        "phases": phases,
        "phases_completed": [p for p in meta.get("phases_completed") or [] if isinstance(p, str)]
        if isinstance(meta.get("phases_completed"), list) else [],
        "calls": calls,
        "spend_usd": round(float(sum(spend.values())), 6),
        #: ``{"datapoints_per_task_teacher": N, "full_totals": {...}}`` after a ``--limit`` slice
        "limit": meta.get(LIMIT_KEY),
        #: an adaptive run's decisions (screening, looks, stop, calls saved), as meta.json keeps them
        **({"adaptive": meta["adaptive"]} if isinstance(meta.get("adaptive"), dict) else {}),
        "next": f"coeval analyze --run {result.run_folder}",
    }


def _counts(run: RunFolder, meta: dict[str, Any]) -> tuple[dict[str, int], dict[str, float]]:
    """Calls and spend per model as the call ledger counts them (``meta.json`` may be
    behind it: a full disk, a kill); a run from before the ledger: ``meta.json``'s."""
    path = ledger_path(run.root)
    if path.is_file():
        try:
            totals = read_ledger(path, strict=False)
        except OSError:
            pass
        else:
            return ({k: v for k, v in totals.calls.items() if v},
                    {k: v for k, v in totals.spend_by_model().items() if v})
    calls, spend = meta.get("calls"), meta.get("spend_usd")
    return (dict(calls) if isinstance(calls, dict) else {},
            {k: float(v) for k, v in spend.items() if isinstance(v, (int, float))} if isinstance(spend, dict) else {})


def run_summary_json(result: Any) -> str:
    return json.dumps(run_summary(result), indent=2, sort_keys=False, default=str)
