"""Routing items into lanes as the lanes need them, and starting their workers."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from coeval.config.credentials import redact
from coeval.interfaces.base import Interface
from coeval.scheduler.adaptive import AdaptiveLimit
from coeval.scheduler.batch_run import BatchRun
from coeval.scheduler.lanes import Lane, LaneQueue, Slots, lane_for_new_worker
from coeval.scheduler.state import _BUFFER_PER_SLOT, _MIN_BUFFER, _carry_over, _Job, _PhaseRun
from coeval.scheduler.work import WorkItem

log = logging.getLogger("coeval.scheduler")


class Routing(BatchRun):
    """Routing items into lanes as the lanes need them, and starting their workers."""

    # ------------------------------------------------------------------ set-up

    def _route(self, run: _PhaseRun, items: Iterable[WorkItem]) -> list[_Job]:
        """Put each item in its lane's queue, or aside for the batch executor."""
        executor = self.batch_executor
        batch: list[_Job] = []
        unroutable: list[_Job] = []
        self._prepare_lanes()
        for item in items:
            job = self._job(run, item)
            if executor is not None and executor.wants(item):
                batch.append(job)
                continue
            if job.iface is None:
                unroutable.append(job)
                continue
            self._lane_of(run, item.model.name, job.iface).queue.ready.append(job)
        for job in unroutable:
            self._unroutable(run, job)
        return batch

    def _job(self, run: _PhaseRun, item: WorkItem) -> _Job:
        """A routed item's job, counted as live until it is done."""
        job = _Job(item, self.interfaces.get(item.model.name))
        if item.prior is not None:
            _carry_over(job, item.prior)
        run.live.add(job)
        run.routed += 1
        run.remaining += 1
        return job

    def _lane_of(self, run: _PhaseRun, name: str, iface: Interface) -> Lane:
        """The lane whose queue model ``name``'s items join (opened on first use)."""
        key = self._lane_keys.get(name)
        if key is None:
            key = self._lane_keys[name] = iface.connection_key()
        lane = run.entries.get(key)
        if lane is None:
            lane = run.entries[key] = self._open_lanes(run, key, iface)
        if name not in lane.models:
            self._add_model(lane, name, iface)
        return lane

    def _unroutable(self, run: _PhaseRun, job: _Job) -> None:
        job.last_kind, job.last_error = "fatal", f"no interface is loaded for model {job.item.model.name!r}"
        self._finish(run, job, "failed")

    def _refill(self, run: _PhaseRun) -> None:
        """Take items from a streamed phase's iterable into their lanes' queues until the
        items routed and not yet done reach :data:`_BUFFER_PER_SLOT` times the lanes'
        current limits (at least :data:`_MIN_BUFFER`), and start workers for them. An item
        that cannot be built stops the phase; ``run`` re-raises its error."""
        if run.source is None or run.refilling or run.stopping:
            return
        run.refilling = True
        touched: set[Lane] = set()
        try:
            cap = max(_MIN_BUFFER, _BUFFER_PER_SLOT * sum(lane.limit.current for lane in run.lanes.values()))
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
                lane = self._lane_of(run, item.model.name, job.iface)
                lane.queue.ready.append(job)
                touched.add(lane)
        except Exception as exc:
            run.source = None
            if run.on_done_error is None:
                run.on_done_error = exc
                log.error("could not build the next item of %s: %s; stopping the phase", run.phase_id, redact(str(exc)))
            run.refilling = False
            self._stop(run, "cancelled")
            return
        run.refilling = False
        for lane in touched:
            self._spawn_workers(run, lane)
        run.settle()

    def _prepare_lanes(self) -> None:
        """Key every model's lane once, so each lane's bound is the smallest
        ``max_concurrency`` among the models that share it, whichever is routed first."""
        for name, iface in self.interfaces.items():
            if name not in self._lane_keys:
                key = self._lane_keys[name] = iface.connection_key()
                self._limiter_for(key, iface)

    def _open_lanes(self, run: _PhaseRun, key: str, iface: Interface) -> Lane:
        """The lane of connection ``key`` for this phase: one lane, or one per replica
        sharing one queue (``parameters.base_url`` as a list). Returns the first."""
        replicas = iface.replica_views()
        if not replicas:
            lane = run.lanes[key] = Lane(key, self._limiter_for(key, iface), iface, slots=self._slots_for(key))
            return lane
        queue = LaneQueue()
        for url, view in replicas:
            sub = f"{key} [{url}]"
            run.lanes[sub] = Lane(sub, self._limiter_for(sub, view), view, queue=queue, url=url,
                                  slots=self._slots_for(sub))
        return queue.lanes[0]

    def _add_model(self, lane: Lane, name: str, iface: Interface) -> None:
        """Note that model ``name`` calls through ``lane`` (and, replicated, bind it to each replica)."""
        views = dict(iface.replica_views()) if lane.queue.replicated else {}
        for member in lane.queue.lanes:
            member.models.append(name)
            if member.url in views:
                member.pinned[name] = views[member.url]
                member.limit.cap(iface.max_concurrency)

    def _limiter_for(self, key: str, iface: Interface) -> AdaptiveLimit:
        limiter = self._limiters.get(key)
        if limiter is None:
            limiter = self._limiters[key] = AdaptiveLimit(
                iface.default_concurrency, iface.max_concurrency, queue_aware=bool(getattr(iface, "queue_aware", False))
            )
        limiter.cap(iface.max_concurrency)
        return limiter

    def _slots_for(self, key: str) -> Slots:
        slots = self._slots.get(key)
        if slots is None:
            slots = self._slots[key] = Slots()
        return slots

    def _spawn_workers(self, run: _PhaseRun, lane: Lane) -> None:
        """Start workers until the lane's connection runs at its limit (counting the lanes of
        other phases running at once) or every queued job has one; for replicas, each new
        worker goes to the admitted replica with the fewest outstanding. A lane that wants
        more workers than the limit leaves waits for the next slot given up."""
        if run.stopping:
            return
        queue = lane.queue
        if not queue.replicated:
            slots, limit = lane.slots, lane.limit
            while lane.workers - lane.in_flight < len(queue.ready):
                if slots.held >= limit.current:
                    slots.wait(run, lane)
                    return
                self._start_worker(run, lane)
            return
        now = self.clock.now()
        while (target := lane_for_new_worker(queue, now)) is not None:
            self._start_worker(run, target)
        if sum(m.workers - m.in_flight for m in queue.lanes) < len(queue.ready):
            for member in queue.lanes:
                member.slots.wait(run, member)

    def _give_slot(self, slots: Slots) -> None:
        """A worker gave up its slot: start one for the lane that waited longest for it (its
        phase still running and its items still unserved)."""
        entries = list(slots.waiting.items())  # one pass: a lane that still cannot start waits again
        for key, (run, lane) in entries:
            if slots.waiting.get(key) is None:
                continue
            del slots.waiting[key]
            if run.stopping or run.finished.is_set():
                continue
            held = slots.held
            self._spawn_workers(run, lane)
            if slots.held > held:
                return

    def _start_worker(self, run: _PhaseRun, lane: Lane) -> None:
        lane.workers += 1
        lane.slots.held += 1
        task = asyncio.ensure_future(self._worker(run, lane))
        run.tasks.add(task)
        task.add_done_callback(run.tasks.discard)

