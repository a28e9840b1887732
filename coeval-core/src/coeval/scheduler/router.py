"""Which lane each model's calls go through: one lane per connection (provider + credential),
or one per replica sharing one queue, each with its adaptive limit.

The limits and slots are the run's, kept across phases (a phase starts at the concurrency
the last one learned, and phases running at once share a connection's slots); the lanes
themselves are one phase's (:class:`~coeval.scheduler.phase_run.PhaseRun`).
"""

from __future__ import annotations

from collections.abc import Mapping

from coeval.interfaces.base import Interface
from coeval.scheduler.adaptive import AdaptiveLimit
from coeval.scheduler.lanes import Lane, LaneQueue, Slots
from coeval.scheduler.phase_run import PhaseRun

__all__ = ["Router"]


class Router:
    """Opens each phase's lanes, keyed by connection, over the run's limits and slots."""

    def __init__(self, interfaces: Mapping[str, Interface]) -> None:
        self.interfaces = interfaces
        self._limiters: dict[str, AdaptiveLimit] = {}
        self._slots: dict[str, Slots] = {}
        self._lane_keys: dict[str, str] = {}

    def limiter(self, connection_key: str) -> AdaptiveLimit | None:
        """The adaptive limit learned for a connection (for status displays and tests)."""
        return self._limiters.get(connection_key)

    def prepare(self) -> None:
        """Key every model's lane once, so each lane's bound is the smallest
        ``max_concurrency`` among the models that share it, whichever is routed first."""
        for name, iface in self.interfaces.items():
            if name not in self._lane_keys:
                key = self._lane_keys[name] = iface.connection_key()
                self._limiter_for(key, iface)

    def lane_of(self, run: PhaseRun, name: str, iface: Interface) -> Lane:
        """The lane whose queue model ``name``'s items join in ``run`` (opened on first use)."""
        key = self._lane_keys.get(name)
        if key is None:
            key = self._lane_keys[name] = iface.connection_key()
        lane = run.entries.get(key)
        if lane is None:
            lane = run.entries[key] = self._open_lanes(run, key, iface)
        if name not in lane.models:
            self._add_model(lane, name, iface)
        return lane

    def _open_lanes(self, run: PhaseRun, key: str, iface: Interface) -> Lane:
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

    @staticmethod
    def _add_model(lane: Lane, name: str, iface: Interface) -> None:
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
