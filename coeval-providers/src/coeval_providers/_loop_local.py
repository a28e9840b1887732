"""One SDK client per event loop.

Async SDK clients hold connection pools bound to the loop that created them; the pipeline may
run phases in different loops (``asyncio.run`` per phase, tests), so a client is rebuilt when
the running loop changes. The old one is closed if its loop is still open.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

__all__ = ["LoopLocal"]

T = TypeVar("T")


class LoopLocal(Generic[T]):
    def __init__(self, factory: Callable[[], T], closer: Callable[[T], Awaitable[None]] | None = None) -> None:
        self._factory = factory
        self._closer = closer
        self._loop: asyncio.AbstractEventLoop | None = None
        self._value: T | None = None

    def get(self) -> T:
        loop = asyncio.get_running_loop()
        if self._value is None or self._loop is not loop:
            self._value = self._factory()
            self._loop = loop
        return self._value

    def peek(self) -> T | None:
        """The client of the running loop, if one was made (None otherwise)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None
        return self._value if self._loop is loop else None

    async def aclose(self) -> None:
        value, loop = self._value, self._loop
        self._value, self._loop = None, None
        if value is None or self._closer is None:
            return
        with contextlib.suppress(Exception):
            if loop is asyncio.get_running_loop():
                await self._closer(value)
