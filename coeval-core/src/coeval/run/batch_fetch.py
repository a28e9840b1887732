"""Collect pending batch jobs outside a run: ``coeval status --fetch-batches``.

After a crash, a Ctrl-C, or a run that stopped waiting at its deadline, the jobs in
``pending_batches.json`` may finish at the provider while no run is polling them.
:func:`fetch_pending_batches` polls each once and, for the finished ones, writes their
records exactly as the run would have: it replays the phases that own pending jobs in Extend
mode with a submit function that hands the phase's items to a collect-only
:class:`~coeval.scheduler.batching.executor.ProviderBatchExecutor` (it never submits and never makes a real-time
call; items that belong to no pending job are left alone). Jobs still running stay pending.

It takes the run folder's lock, so it refuses to run beside a live ``coeval run`` (which
collects its own jobs).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from coeval.config.credentials import KeyStore
from coeval.config.phase_order import ordered_phases
from coeval.console.logs import get_logger
from coeval.phases.base import PhaseContext, PhaseError, PhaseResult
from coeval.plugins.manager import registries as installed
from coeval.scheduler.batching.executor import ProviderBatchExecutor
from coeval.scheduler.batching.pending import PendingStore
from coeval.storage.lock import RunFolderBusyError, RunLock
from coeval.storage.run_folder import RunFolder, utc_now

if TYPE_CHECKING:
    from coeval.plugins.manager import Registries

__all__ = ["FetchError", "FetchReport", "afetch_pending_batches", "fetch_pending_batches"]


class FetchError(RuntimeError):
    """The pending jobs cannot be fetched now (a run holds the folder, unreadable file)."""


@attrs.define
class FetchReport:
    pending_before: int = 0
    collected: list[str] = attrs.field(factory=list)
    still_pending: list[str] = attrs.field(factory=list)
    records: Counter[str] = attrs.field(factory=Counter)  # "ok" / "failed" records written
    notes: list[str] = attrs.field(factory=list)

    def summary(self) -> str:
        if not self.pending_before:
            return "no pending batch jobs"
        return (f"{len(self.collected)} of {self.pending_before} batch jobs collected "
                f"({self.records['ok']} records ok, {self.records['failed']} failed); "
                f"{len(self.still_pending)} still pending")


def fetch_pending_batches(
    run_folder: str | Path | RunFolder, config: Any, keystore: KeyStore | None = None, *,
    registries: Registries | None = None, log: Any = None,
) -> FetchReport:
    """Poll every pending batch job of the run once; write the records of the finished ones.
    ``registries``: the installed plugins' when None (an entry point of the Python API)."""
    if registries is None:
        registries = installed()
    return asyncio.run(afetch_pending_batches(run_folder, config, keystore, registries=registries, log=log))


async def afetch_pending_batches(
    run_folder: str | Path | RunFolder, config: Any, keystore: KeyStore | None = None, *,
    registries: Registries, log: Any = None,
) -> FetchReport:
    run = run_folder if isinstance(run_folder, RunFolder) else RunFolder(run_folder)
    if log is None:
        log = get_logger()
    report = FetchReport()
    try:
        jobs = PendingStore(run).load()
    except ValueError as exc:
        raise FetchError(str(exc)) from None
    report.pending_before = len(jobs)
    if not jobs:
        return report
    lock = RunLock(run.root, shared=False)
    try:
        lock.acquire()
    except RunFolderBusyError as exc:
        raise FetchError(f"{exc}; that run collects its own batch jobs") from None
    executor = ProviderBatchExecutor(run=run, config=config, enabled=lambda _m, _p: True, keys=keystore or KeyStore(),
                             registries=registries, log=log, submit=False, wait=False)
    ledger: Counter[str] = Counter()
    calls: Counter[str] = Counter()
    spend: dict[str, float] = {}
    try:
        phases_with_jobs = {job.phase for job in jobs}
        known = {job.phase for job in jobs if any(p.name == job.phase for p in registries.phases)}
        for phase_id in sorted(phases_with_jobs - known):
            report.notes.append(f"pending jobs of unknown phase {phase_id!r} left as they are")
        for phase in ordered_phases(registries):
            if phase.name not in phases_with_jobs:
                continue

            async def submit(phase_id: str, items: Iterable[Any]) -> None:
                wanted = [item for item in items if executor.wants(item)]

                def on_outcome(outcome: Any) -> None:
                    outcome.item.on_done(outcome)
                    ledger[outcome.status] += 1
                    calls[outcome.item.model.name] += int(outcome.attempts)
                    name = outcome.item.model.name
                    spend[name] = spend.get(name, 0.0) + float(outcome.cost_usd or 0.0)

                await executor.run(phase_id, wanted, on_outcome)

            ctx = PhaseContext(config, run, mode="Extend", submit=submit, log=log.bind(phase=phase.name)
                               if hasattr(log, "bind") else log, registries=registries)
            ctx.result = PhaseResult(phase.name, "Extend")
            try:
                await phase.run(ctx)
            except PhaseError as exc:
                report.notes.append(f"{phase.name}: {exc}")
            finally:
                ctx.writers.close()
        _add_to_meta(run, ledger, calls, spend)
    finally:
        lock.release()
    report.collected = list(executor.collected)
    remaining = {job.job_id for job in PendingStore(run).load()}
    report.still_pending = sorted(remaining)
    report.records = ledger
    return report


def _add_to_meta(run: RunFolder, outcomes: Counter[str], calls: Counter[str], spend: dict[str, float]) -> None:
    """Calls and spend of the collected items count toward quota and budget like any others."""
    if not outcomes:
        return
    def change(meta: dict[str, Any]) -> None:
        c = meta.setdefault("calls", {})
        for name, n in calls.items():
            c[name] = int(c.get(name, 0)) + n
        s = meta.setdefault("spend_usd", {})
        for name, usd in spend.items():
            s[name] = round(float(s.get(name, 0.0)) + usd, 10)
        fetches = meta.setdefault("batch_fetches", [])
        fetches.append({"at": utc_now(), "ok": outcomes["ok"], "failed": outcomes["failed"]})
        meta["batch_fetches"] = fetches[-50:]

    run.update_meta(change)
