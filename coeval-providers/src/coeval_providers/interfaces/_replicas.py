"""Several replicas of one model server behind one model name (``base_url`` as a list).

This routes the calls made outside the scheduler (the probe before a run, ``coeval
probe``). The scheduler routes a phase's calls itself, one lane and one adaptive limit per
replica (:mod:`coeval.scheduler.lanes`), through the interface's ``replica_views()``.

Here each call goes to the admitted replica with the fewest calls outstanding. A replica that
refuses or drops a connection is ejected at once; one that times out
:attr:`ReplicaSet.timeouts_to_eject` times in a row is ejected too. An ejected replica is
probed with backoff (1 s doubling to 30 s): once its ejection expires, one call may go to
it, and an answer re-admits it. A call that found its replica down is sent again at once to
another admitted replica, so no attempt is spent on a dead replica. When every replica is
down, :class:`ReplicasUnavailableError` (a ``ConnectionError``) reaches the scheduler, which
then waits for a server to come back (``connect_wait_s``).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import attrs
from coeval.scheduler.server_wait import is_connection_failure, is_timeout

__all__ = ["Replica", "ReplicaSet", "ReplicasUnavailableError"]

T = TypeVar("T")


class ReplicasUnavailableError(ConnectionError):
    """Every replica refused the connection or is ejected."""


@attrs.define
class Replica:
    url: str
    outstanding: int = 0
    served: int = 0
    timeouts_in_a_row: int = 0
    ejections: int = 0
    ejected_until: float = 0.0
    probing: bool = False

    def available(self, now: float) -> bool:
        """Admitted, or ejected long enough ago that one probe call may go."""
        if self.ejected_until == 0.0:
            return True
        return now >= self.ejected_until and not self.probing


@attrs.define
class ReplicaSet:
    replicas: list[Replica]
    timeouts_to_eject: int = 3
    first_ejection_s: float = 1.0
    max_ejection_s: float = 30.0
    clock: Callable[[], float] = time.monotonic

    @classmethod
    def of(cls, urls: Sequence[str]) -> ReplicaSet:
        return cls([Replica(u) for u in urls])

    def pick(self) -> Replica | None:
        """The available replica with the fewest calls outstanding (ties: the first)."""
        now = self.clock()
        candidates = [r for r in self.replicas if r.available(now)]
        if not candidates:
            return None
        choice = min(candidates, key=lambda r: r.outstanding)
        if choice.ejected_until:
            choice.probing = True
        return choice

    def _eject(self, replica: Replica) -> None:
        replica.ejections += 1
        backoff = min(self.max_ejection_s, self.first_ejection_s * 2.0 ** (replica.ejections - 1))
        replica.ejected_until = self.clock() + backoff
        replica.probing = False
        replica.timeouts_in_a_row = 0

    def _admit(self, replica: Replica) -> None:
        replica.ejected_until = 0.0
        replica.ejections = 0
        replica.probing = False
        replica.timeouts_in_a_row = 0

    async def call(self, send: Callable[[str], Awaitable[T]]) -> T:
        """``send(url)`` on the best replica; on a refused connection, on the next one."""
        tried: set[int] = set()
        while True:
            replica = self.pick()
            if replica is None or id(replica) in tried:
                if replica is not None:
                    replica.probing = False
                urls = ", ".join(r.url for r in self.replicas)
                raise ReplicasUnavailableError(f"no replica answers ({urls})")
            tried.add(id(replica))
            replica.outstanding += 1
            try:
                result = await send(replica.url)
            except Exception as exc:
                if is_connection_failure(exc):
                    self._eject(replica)
                    continue
                if is_timeout(exc):
                    replica.timeouts_in_a_row += 1
                    if replica.timeouts_in_a_row >= self.timeouts_to_eject or replica.probing:
                        self._eject(replica)
                elif replica.probing:
                    self._admit(replica)  # it answered, even if with an error
                raise
            finally:
                replica.outstanding -= 1
            replica.served += 1
            if replica.ejected_until or replica.timeouts_in_a_row:
                self._admit(replica)
            return result
