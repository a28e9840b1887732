"""Taking a phase's items into their lanes' queues: all at once (a list, or a phase with a
batch executor), or a streamed phase's as the lanes need them.

A streamed phase keeps at most :data:`BUFFER_PER_SLOT` times the lanes' current limits
routed and not yet done (at least :data:`MIN_BUFFER`), so a phase of millions of items
starts its first call at once and holds O(concurrency) items in memory.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping

from coeval.config.credentials import redact
from coeval.interfaces.base import Interface
from coeval.scheduler.job import Job
from coeval.scheduler.lanes import Lane
from coeval.scheduler.outcomes import Outcomes
from coeval.scheduler.phase_run import PhaseRun
from coeval.scheduler.router import Router
from coeval.scheduler.work import WorkItem
from coeval.scheduler.workers import Workers

__all__ = ["BUFFER_PER_SLOT", "MIN_BUFFER", "Intake"]

log = logging.getLogger("coeval.scheduler")

#: Items routed and not yet done, at least (a streamed phase) ...
MIN_BUFFER = 256
#: ... and at most this many times the lanes' current limits together.
BUFFER_PER_SLOT = 4


class Intake:
    """Turns items into jobs on their lanes' queues. ``batched`` says which items go to the
    batch executor instead (None: none do)."""

    def __init__(self, interfaces: Mapping[str, Interface], router: Router, outcomes: Outcomes, workers: Workers, *,
                 batched: Callable[[WorkItem], bool] | None = None) -> None:
        self.interfaces = interfaces
        self.router = router
        self.outcomes = outcomes
        self.workers = workers
        self.batched = batched

    def route(self, run: PhaseRun, items: Iterable[WorkItem]) -> list[Job]:
        """Put each item in its lane's queue now; returns the jobs for the batch executor."""
        batched = self.batched
        batch: list[Job] = []
        unroutable: list[Job] = []
        self.router.prepare()
        for item in items:
            job = self._job(run, item)
            if batched is not None and batched(item):
                batch.append(job)
                continue
            if job.iface is None:
                unroutable.append(job)
                continue
            self.router.lane_of(run, item.model.name, job.iface).queue.ready.append(job)
        for job in unroutable:
            self._unroutable(run, job)
        return batch

    def stream(self, run: PhaseRun, items: Iterable[WorkItem]) -> None:
        """Take ``items`` as the lanes need them (:meth:`refill`)."""
        self.router.prepare()
        run.source = iter(items)

    def refill(self, run: PhaseRun) -> None:
        """Take items from a streamed phase's iterable into their lanes' queues until the
        items routed and not yet done reach :data:`BUFFER_PER_SLOT` times the lanes'
        current limits (at least :data:`MIN_BUFFER`), and start workers for them. An item
        that cannot be built stops the phase; ``run`` re-raises its error."""
        if run.source is None or run.refilling or run.stopping:
            return
        run.refilling = True
        touched: set[Lane] = set()
        try:
            cap = max(MIN_BUFFER, BUFFER_PER_SLOT * sum(lane.limit.current for lane in run.lanes.values()))
            source = run.source
            while run.remaining < cap:
                try:
                    item = next(source)
                except StopIteration:
                    run.source = None
                    break
                job = self._job(run, item)
                if job.iface is None:
                    self._unroutable(run, job)
                    continue
                lane = self.router.lane_of(run, item.model.name, job.iface)
                lane.queue.ready.append(job)
                touched.add(lane)
        except Exception as exc:
            run.source = None
            if run.on_done_error is None:
                run.on_done_error = exc
                log.error("could not build the next item of %s: %s; stopping the phase", run.phase_id, redact(str(exc)))
            run.refilling = False
            self.outcomes.stop(run, "cancelled")
            return
        run.refilling = False
        for lane in touched:
            self.workers.spawn(run, lane)
        run.settle()

    def _job(self, run: PhaseRun, item: WorkItem) -> Job:
        """A routed item's job, counted as live until it is done."""
        job = Job(item, self.interfaces.get(item.model.name))
        if item.prior is not None:
            job.carry_over(item.prior)
        run.live.add(job)
        run.routed += 1
        run.remaining += 1
        return job

    def _unroutable(self, run: PhaseRun, job: Job) -> None:
        job.last_kind, job.last_error = "fatal", f"no interface is loaded for model {job.item.model.name!r}"
        self.outcomes.finish(run, job, "failed")
