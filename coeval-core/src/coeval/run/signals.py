"""Stopping a run from the keyboard: the first Ctrl-C (or SIGTERM) stops starting calls
and lets those in flight finish and be written; a second one stops at once."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from coeval.scheduler import Scheduler

if TYPE_CHECKING:
    from coeval.run.result import RunResult

__all__ = ["Interrupts", "handle_signals", "off_the_loop", "stop_gracefully"]

T = TypeVar("T")


class Interrupts:
    """First Ctrl-C: stop gracefully. Second: stop now."""

    def __init__(self, task: asyncio.Task[Any] | None) -> None:
        self.task = task
        self.count = 0
        self.on_first: Callable[[], None] | None = None
        #: the run's result, set when the run ends interrupted
        self.result: RunResult | None = None

    def __call__(self) -> None:
        self.count += 1
        if self.count == 1 and self.on_first is not None:
            sys.stderr.write("\ncoeval: stopping after the calls in flight (Ctrl-C again to stop now)\n")
            self.on_first()
        elif self.task is not None:
            self.task.cancel()


def stop_gracefully(scheduler: Scheduler | None) -> None:
    """Start no new call; calls an interface queued but has not started (a local model's)
    are given back; a batch wait (which can last hours) ends now."""
    if scheduler is not None:
        scheduler.cancel()
        for iface in scheduler.interfaces.values():
            iface.stop_queued()
        stop_waiting = getattr(scheduler.batch_executor, "stop_waiting", None)
        if callable(stop_waiting):
            stop_waiting()


@contextlib.contextmanager
def handle_signals(loop: asyncio.AbstractEventLoop, interrupts: Interrupts) -> Iterator[None]:
    """SIGINT and SIGTERM call ``interrupts`` while the block runs (where the loop can: not
    outside the main thread, nor on Windows)."""
    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, interrupts)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or Windows
            pass
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


async def off_the_loop(work: Callable[..., T], *args: Any) -> T:
    """``work(*args)`` in a daemon thread while the event loop goes on: reading a run folder
    of millions of records before the first phase must not hold back Ctrl-C or SIGTERM. When
    the run is cancelled meanwhile, the await ends at once and the thread is left to finish
    (a daemon: the process does not wait for it at exit); its result is dropped."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(value: Any, failed: bool) -> None:
        if done.done():  # cancelled meanwhile
            return
        if failed:
            done.set_exception(value)
        else:
            done.set_result(value)

    def thread() -> None:
        try:
            value: Any = work(*args)
            failed = False
        except BaseException as exc:  # handed to the awaiting task
            value, failed = exc, True
        with contextlib.suppress(RuntimeError):  # the loop closed first
            loop.call_soon_threadsafe(settle, value, failed)

    threading.Thread(target=thread, name="coeval-prework", daemon=True).start()
    return await done
