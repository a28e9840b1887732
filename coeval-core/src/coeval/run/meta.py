"""The ``meta.json`` lifecycle of one process's run: opened, each phase started and
finished, closed with a status. Every change is a read-modify-write under the folder's
meta lock, so ``--only-models`` shards sharing a folder never lose each other's entries."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from coeval.phases.base import PhaseResult
from coeval.storage.run_folder import RunFolder, utc_now

__all__ = ["RunMeta", "a_process_stopped_unfinished"]


def a_process_stopped_unfinished(meta: Mapping[str, Any]) -> bool:
    """Whether an earlier process of this folder ended without finishing (killed): the run
    was left ``in_progress``, or a process's entry in ``runs`` was never closed. Only such a
    process can have made calls that ``meta.json`` does not count yet."""
    if meta.get("status") == "in_progress":
        return True
    return any(isinstance(r, dict) and "finished_at" not in r for r in meta.get("runs") or [])


class RunMeta:
    """This process's entries in ``meta.json`` (``run_id`` names its entry in ``runs``)."""

    def __init__(self, run: RunFolder, run_id: str, only: Collection[str] = ()) -> None:
        self.run = run
        self.run_id = run_id
        self.only = frozenset(only)

    def init(self, experiment_id: str, *, continue_run: bool, resume_from: str | None,
             fork: dict[str, Any] | None) -> dict[str, Any]:
        """Mark the run in progress and open this process's entry in ``runs``."""
        now = utc_now()

        def change(meta: dict[str, Any]) -> None:
            meta.setdefault("experiment_id", experiment_id)
            meta.setdefault("created_at", now)
            meta["status"] = "in_progress"
            for key in ("phases_completed", "phases_in_progress", "phase_log", "ingest_log", "runs"):
                meta.setdefault(key, [])
            meta.setdefault("calls", {})
            meta.setdefault("spend_usd", {})
            meta.setdefault("resume_from", resume_from)
            if fork is not None:
                meta["forked_from"] = fork
            meta["runs"].append({
                "run_id": self.run_id,
                "started_at": now,
                "continue": continue_run,
                "only_models": sorted(self.only),
            })
            meta["runs"] = meta["runs"][-50:]

        return self.run.update_meta(change)

    def phase_started(self, name: str, order: Sequence[str] = ()) -> None:
        """Mark ``name`` in progress. The phases after it (in ``order``) are no longer
        complete: what this phase writes may make their records stale, and a kill before
        they run again must not leave them recorded complete."""
        later = set(order[order.index(name) + 1:]) if name in order else set()

        def change(meta: dict[str, Any]) -> None:
            if name not in meta.setdefault("phases_in_progress", []):
                meta["phases_in_progress"].append(name)
            if later:
                meta["phases_completed"] = [p for p in meta.get("phases_completed") or [] if p not in later]

        self.run.update_meta(change)

    def phase_finished(self, result: PhaseResult, started: str, order: Sequence[str]) -> None:
        """Log the phase and move it to ``phases_completed`` (kept in run ``order``) or out."""
        name = result.phase

        def change(meta: dict[str, Any]) -> None:
            ip = meta.setdefault("phases_in_progress", [])
            if name in ip and not self.only:
                ip.remove(name)
            done = meta.setdefault("phases_completed", [])
            if result.status == "completed" and name not in done:
                done.append(name)
                done.sort(key=lambda p: order.index(p) if p in order else len(order))
            elif result.status in ("partial", "failed") and name in done:
                done.remove(name)
            if result.status == "completed" and name in ip:
                ip.remove(name)
            entry = {**result.to_log(), "started_at": started, "finished_at": utc_now()}
            if self.only:
                entry["only_models"] = sorted(self.only)
            meta.setdefault("phase_log", []).append(entry)
            meta["phase_log"] = meta["phase_log"][-500:]

        self.run.update_meta(change)

    def finish(self, status: str, exit_code: int) -> None:
        def change(meta: dict[str, Any]) -> None:
            meta["status"] = status
            mine = [r for r in meta.get("runs") or [] if r.get("run_id") == self.run_id]
            if mine:
                mine[-1].update({"finished_at": utc_now(), "exit_code": exit_code, "status": status})

        self.run.update_meta(change)
