"""The moment a call leaves this process.

The call ledger writes a call's start before the call can cost money, so that a kill cannot
hide a paid call. Written before the SDK builds the request, the line also counts calls a
kill caught before anything was sent: the SDK's own work, and on a busy event loop other
calls' work, lies between. An interface whose HTTP client says when a request goes out
(``announces_send``) calls :func:`announce_send` at that moment, and the scheduler writes
the start line then; the window a kill can fall into shrinks to the client's last step.

The hook travels in a context variable: each call runs in its own task, so concurrent
calls never see each other's hook, and a request made outside a scheduled call (a probe,
``coeval models``) announces to nobody.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

__all__ = ["announce_send", "httpx_request_hook", "on_send"]

_HOOK: ContextVar[Callable[[], None] | None] = ContextVar("coeval_on_send", default=None)


def announce_send() -> None:
    """The current call's request is about to be written to the network. Raises what the
    hook raises (``OSError`` when the ledger cannot take the line: the request is then not
    sent)."""
    hook = _HOOK.get()
    if hook is not None:
        hook()


@contextlib.contextmanager
def on_send(hook: Callable[[], None]) -> Iterator[None]:
    """Within the block, :func:`announce_send` calls ``hook`` (the current task only)."""
    token = _HOOK.set(hook)
    try:
        yield
    finally:
        _HOOK.reset(token)


async def httpx_request_hook(request: Any) -> None:
    """An ``event_hooks={"request": [...]}`` entry for the SDKs' httpx clients: httpx calls
    it after the SDK built the request and right before the transport sends it."""
    announce_send()
