"""Waiting for a server that is down (restarting, not started yet) instead of failing items.

A refused or reset connection means the server never saw the call, so it costs the item
no attempt. The lane pauses with exponential backoff (``0.25 s`` doubling to ``10 s``) and
every paused call is tried again, until the server has been unreachable for
``connect_wait_s`` seconds in a row (default 300); only then do its items fail, with a
message naming the server's URL. Any answer resets the wait.
"""

from __future__ import annotations

import attrs

__all__ = ["DEFAULT_CONNECT_WAIT_S", "ServerWait", "is_connection_failure", "is_timeout"]

DEFAULT_CONNECT_WAIT_S = 300.0

#: Exception type names (anywhere in the cause chain) that mean "the server is not there".
_DOWN_NAMES = frozenset(
    {
        "ConnectError", "ConnectionRefusedError", "ConnectionResetError", "ConnectionAbortedError",
        "RemoteProtocolError", "ServerDisconnectedError", "ClientConnectorError", "EndpointConnectionError",
        "ReplicasUnavailableError",
    }
)  # fmt: skip


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 12:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def is_connection_failure(exc: BaseException) -> bool:
    """Whether ``exc`` says the server refused or dropped the connection. Looks through the
    whole cause chain: some SDKs report a dropped connection as a timeout."""
    return any(type(e).__name__ in _DOWN_NAMES or isinstance(e, ConnectionError) for e in _chain(exc))


def is_timeout(exc: BaseException) -> bool:
    """Whether ``exc`` is a call that ran out of time on a server that was there."""
    if is_connection_failure(exc):
        return False
    return any(isinstance(e, TimeoutError) or "Timeout" in type(e).__name__ for e in _chain(exc))


@attrs.define
class ServerWait:
    """One lane's unreachable-server state."""

    wait_s: float = DEFAULT_CONNECT_WAIT_S
    first_delay_s: float = 0.25
    max_delay_s: float = 10.0
    down_since: float | None = None
    failures: int = 0
    resume_at: float = 0.0

    def refused(self, now: float) -> float | None:
        """A call found the server down at ``now``: seconds to pause the lane, or None
        once ``wait_s`` is used up (the items should fail)."""
        if self.down_since is None:
            self.down_since = now
        if now - self.down_since >= self.wait_s:
            return None
        if now < self.resume_at:  # another call of the same outage: same pause
            return self.resume_at - now
        delay = min(self.max_delay_s, self.first_delay_s * 2.0**self.failures)
        self.failures += 1
        delay = min(delay, max(0.0, self.down_since + self.wait_s - now) + 0.01)
        self.resume_at = now + delay
        return delay

    def exhausted(self, now: float) -> bool:
        """Down for ``wait_s`` or longer (up, or down for less, is not)."""
        return self.down_since is not None and now - self.down_since >= self.wait_s

    def answered(self) -> bool:
        """The server answered. Returns whether it had been down (to say it is back)."""
        was_down = self.down_since is not None
        self.down_since = None
        self.failures = 0
        self.resume_at = 0.0
        return was_down
