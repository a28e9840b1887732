"""A warning when the run holds stale records: judgments of answers that were made again
(or are gone), answers to datapoints that were. They still count in the numbers until
``coeval run --continue`` makes them again, so the reader must know."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coeval.storage.record_inputs import stale_note, stale_records
from coeval.storage.run_folder import RunFolder

__all__ = ["stale_warnings"]


def stale_warnings(run_path: str | Path) -> list[dict[str, Any]]:
    """``[{"kind": "stale_records", ...}]`` when the run has any, else []."""
    try:
        stale = stale_records(RunFolder(run_path))
    except (OSError, ValueError):
        return []
    if not stale:
        return []
    return [{"kind": "stale_records", "subject": None, "message": stale_note(stale), "counts": dict(stale)}]
