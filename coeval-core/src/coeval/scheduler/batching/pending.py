"""``pending_batches.json``: provider batch jobs submitted and not yet collected.

A job is written here right after the provider accepts it and before the first poll, and
removed only after every one of its items has had its record written. So a crash, a
Ctrl-C or a detached run never loses a paid job: ``coeval run --continue`` and
``coeval status --fetch-batches`` find it here and collect it instead of submitting again.

Format (``version`` 1)::

    {"version": 1, "jobs": [
      {"job_id": "batch_abc", "interface": "openai", "model": "gpt-4o-mini",
       "phase": "response_collection", "submitted_at": "2026-11-21T20:00:00Z",
       "requests": 2, "items": {"r0": "<record id>", "r1": "<record id>"},
       "state": "running", "polled_at": "2026-11-21T20:05:00Z", "message": ""}]}

``items`` maps the custom id sent to the provider to the record id (``WorkItem.key``).
Writes are atomic (temp file + rename) under a lock, since shards may share the folder.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
from filelock import FileLock

from coeval.storage.run_folder import RunFolder, atomic_write_json, utc_now
from coeval.storage.safe_files import folder_lock

__all__ = ["PENDING_FILE", "PendingJob", "PendingStore"]

PENDING_FILE = "pending_batches.json"


@attrs.define
class PendingJob:
    job_id: str
    interface: str
    model: str
    phase: str
    items: dict[str, str]
    submitted_at: str = attrs.field(factory=utc_now)
    state: str = "submitted"
    polled_at: str | None = None
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id, "interface": self.interface, "model": self.model, "phase": self.phase,
            "submitted_at": self.submitted_at, "requests": len(self.items), "items": dict(self.items),
            "state": self.state, "polled_at": self.polled_at, "message": self.message,
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> PendingJob | None:
        try:
            return cls(job_id=str(raw["job_id"]), interface=str(raw["interface"]), model=str(raw["model"]),
                       phase=str(raw["phase"]), items={str(k): str(v) for k, v in dict(raw["items"]).items()},
                       submitted_at=str(raw.get("submitted_at") or ""), state=str(raw.get("state") or "submitted"),
                       polled_at=raw.get("polled_at"), message=str(raw.get("message") or ""))
        except (KeyError, TypeError, ValueError, AttributeError):
            return None


class PendingStore:
    """Read and change ``pending_batches.json`` of one run folder."""

    def __init__(self, run: RunFolder) -> None:
        self.run = run
        self.path: Path = run.root / PENDING_FILE
        self.unreadable: list[Any] = []  # entries of another format, kept as they are

    def _lock(self) -> FileLock:
        return folder_lock(self.run.root / ".pending_batches.lock")

    def _read(self) -> dict[str, Any]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"version": 1, "jobs": []}
        except json.JSONDecodeError as exc:
            raise ValueError(f"{self.path}: not valid JSON ({exc.msg}); it lists paid batch jobs, so it is not "
                             "overwritten: fix or move it, then retry") from None
        if isinstance(raw, list):  # tolerate a bare list of jobs
            raw = {"version": 1, "jobs": raw}
        if not isinstance(raw, dict) or not isinstance(raw.get("jobs", []), list):
            raise ValueError(f"{self.path}: expected {{\"version\": 1, \"jobs\": [...]}}")
        raw.setdefault("jobs", [])
        return raw

    def item_keys_by_phase(self) -> dict[str, set[str]]:
        """Phase -> the keys of the items its pending jobs hold (collect-only runs take only those)."""
        keys: dict[str, set[str]] = {}
        for job in self.load():
            keys.setdefault(job.phase, set()).update(job.items.values())
        return keys

    def load(self) -> list[PendingJob]:
        jobs = []
        self.unreadable = []
        for entry in self._read()["jobs"]:
            job = PendingJob.from_dict(entry) if isinstance(entry, Mapping) else None
            if job is None:
                self.unreadable.append(entry)
            else:
                jobs.append(job)
        return jobs

    def _change(self, change: Callable[[list[Any]], list[Any]]) -> None:
        self.run.root.mkdir(parents=True, exist_ok=True)
        with self._lock():
            data = self._read()
            data["jobs"] = change(list(data["jobs"]))
            data["version"] = 1
            if data["jobs"]:
                atomic_write_json(self.path, data)
            elif self.path.exists():
                self.path.unlink()

    def add(self, job: PendingJob) -> None:
        self._change(lambda jobs: [*jobs, job.to_dict()])

    def update(self, job_id: str, **changes: Any) -> None:
        def change(jobs: list[Any]) -> list[Any]:
            for entry in jobs:
                if isinstance(entry, dict) and entry.get("job_id") == job_id:
                    entry.update(changes)
            return jobs

        self._change(change)

    def remove(self, job_id: str) -> None:
        self._change(lambda jobs: [j for j in jobs if not (isinstance(j, dict) and j.get("job_id") == job_id)])
