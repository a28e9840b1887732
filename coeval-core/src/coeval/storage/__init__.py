"""Run-folder storage: layout, atomic artifacts, JSONL records."""

from coeval.storage.run_folder import (
    PHASE_DIRS,
    JsonlWriter,
    RunFolder,
    atomic_write_json,
    atomic_write_text,
    iter_jsonl,
    utc_now,
)

__all__ = [
    "PHASE_DIRS",
    "JsonlWriter",
    "RunFolder",
    "atomic_write_json",
    "atomic_write_text",
    "iter_jsonl",
    "utc_now",
]
