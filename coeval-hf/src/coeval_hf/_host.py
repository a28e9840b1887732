"""One worker thread that owns every local model of the process.

Local engines are not safe to call from several threads at once (llama.cpp), hold
gigabytes (transformers on a GPU), and get faster when prompts run together. So every call
to a local model goes through this host:

* **one model resident at a time**: running a call for another model unloads the
  resident one first; interfaces that load the same weights with the same options share
  one :class:`ModelSlot` (and so one loaded copy);
* **dynamic micro-batching**: concurrent ``generate()`` calls queue on their slot, and
  when the worker gets to that slot the engine takes as many waiting calls as fit in one
  batch, so a scheduler that keeps N calls in flight gets batches of up to N;
* **the event loop stays free**: loading and generating run in the worker thread;
  results come back to each caller's loop with ``call_soon_threadsafe``;
* **few reloads**: while the resident model still has callers, the worker waits a short
  grace period for more of its calls before it switches to another model, so a phase
  that mixes calls to two local models loads each about once instead of ping-ponging.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from coeval.interfaces.base import (
    CallGivenBack,
    FatalModelError,
    GenerateRequest,
    GenerateResult,
    ModelError,
    TransientModelError,
)

__all__ = ["Engine", "ModelHost", "ModelSlot", "PendingCall", "get_host"]


class PendingCall:
    """A ``generate()`` call waiting for the worker: the request and where its answer goes."""

    __slots__ = ("_future", "_loop", "enqueued_at", "request", "scratch")

    def __init__(self, request: GenerateRequest, loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any]) -> None:
        self.request = request
        self._loop = loop
        self._future = future
        self.enqueued_at = time.monotonic()
        #: The engine's per-call memo (rendered prompt, parsed sampling): computed once.
        self.scratch: dict[str, Any] = {}

    @property
    def abandoned(self) -> bool:
        """The caller stopped waiting (cancelled, or its event loop is gone)."""
        return self._future.done() or self._loop.is_closed()

    def resolve(self, outcome: GenerateResult | BaseException) -> None:
        def deliver() -> None:
            if self._future.done():
                return
            if isinstance(outcome, BaseException):
                self._future.set_exception(outcome)
            else:
                self._future.set_result(outcome)

        with contextlib.suppress(RuntimeError):  # the caller's loop closed meanwhile: nobody listens
            self._loop.call_soon_threadsafe(deliver)


class Engine(Protocol):
    """A loaded model, driven only from the host's worker thread."""

    def select_batch(self, pending: Sequence[PendingCall]) -> list[PendingCall]:
        """Pick the calls to run together now (at least the first one)."""

    def run_batch(self, calls: Sequence[PendingCall]) -> list[GenerateResult | ModelError]:
        """Answer every call; one result or error per call, in order. Never raises."""

    def unload(self) -> None:
        """Free the memory the model holds."""


class ModelSlot:
    """Weights loaded one way (path + load options): shared by the interfaces that use them."""

    def __init__(self, key: str, loader: Callable[[], Engine], label: str) -> None:
        self.key = key
        self.label = label
        self.loader = loader
        self.pending: list[PendingCall] = []
        self.users = 0
        #: A load that failed fails every later call the same way, without trying again.
        self.load_error: ModelError | None = None
        self.loads = 0  # how many times the weights were loaded (tests check reuse with it)
        self.batch_sizes: list[int] = []  # size of every batch run, in order (stats and tests)


class ModelHost:
    """The process-wide owner of local models (see the module docstring)."""

    def __init__(self, switch_grace_s: float = 0.25) -> None:
        self.switch_grace_s = switch_grace_s
        self._cond = threading.Condition()
        self._slots: dict[str, ModelSlot] = {}
        self._resident: ModelSlot | None = None
        self._engine: Engine | None = None
        self._last_served = 0.0
        self._thread: threading.Thread | None = None
        self._busy = False

    # -- called from event loops -------------------------------------------------------------

    def acquire(self, key: str, loader: Callable[[], Engine], label: str) -> ModelSlot:
        """The slot for ``key`` (created on first use); pair with :meth:`release`."""
        with self._cond:
            slot = self._slots.get(key)
            if slot is None and self._resident is not None and self._resident.key == key:
                slot = self._slots[key] = self._resident  # still loaded: reuse it
            if slot is None:
                slot = self._slots[key] = ModelSlot(key, loader, label)
            slot.users += 1
            return slot

    def release(self, slot: ModelSlot) -> None:
        """Drop one user; the last one out unloads the weights (in the worker thread)."""
        with self._cond:
            slot.users = max(0, slot.users - 1)
            if slot.users == 0 and not slot.pending:
                self._slots.pop(slot.key, None)
            self._cond.notify_all()

    async def submit(self, slot: ModelSlot, request: GenerateRequest) -> GenerateResult:
        """Queue one call on ``slot`` and wait for its answer."""
        if slot.load_error is not None:
            raise slot.load_error
        loop = asyncio.get_running_loop()
        future: asyncio.Future[GenerateResult] = loop.create_future()
        with self._cond:
            slot.pending.append(PendingCall(request, loop, future))
            self._slots.setdefault(slot.key, slot)
            self._ensure_worker()
            self._cond.notify_all()
        return await future

    def give_back(self, slot: ModelSlot) -> int:
        """A graceful stop: answer every call queued on ``slot`` with :class:`CallGivenBack`,
        and ask its engine, when it can (``abort()``), to end the generation under way at
        its next token; returns how many queued calls were given back."""
        with self._cond:
            calls, slot.pending = slot.pending, []
            abort = getattr(self._engine, "abort", None) if self._resident is slot else None
            if callable(abort):
                abort()
            self._cond.notify_all()
        for call in calls:
            call.resolve(CallGivenBack(f"{slot.label}: stopped before it started"))
        return len(calls)

    @property
    def resident_key(self) -> str | None:
        with self._cond:
            return self._resident.key if self._resident is not None else None

    def unload_all(self, timeout: float = 60.0) -> None:
        """Block until the worker is idle, then unload the resident model (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while (self._busy or any(s.pending for s in self._slots.values())) and time.monotonic() < deadline:
                self._cond.wait(0.05)
            self._unload_locked()

    # -- the worker thread ---------------------------------------------------------------------

    def _ensure_worker(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._work, name="coeval-local-models", daemon=True)
            self._thread.start()

    def _work(self) -> None:
        while True:
            with self._cond:
                slot = self._next_slot_locked()
                if slot is None:
                    continue
                self._busy = True
            try:
                self._serve(slot)
            finally:
                with self._cond:
                    self._busy = False
                    self._last_served = time.monotonic()
                    self._cond.notify_all()

    def _next_slot_locked(self) -> ModelSlot | None:
        """Wait for work and choose whose calls run next (holding the lock)."""
        for slot in self._slots.values():
            slot.pending = [c for c in slot.pending if not c.abandoned]
        resident = self._resident
        if resident is not None and resident.users == 0 and not resident.pending:
            self._unload_locked()  # its last interface closed
            resident = None
        if resident is not None and resident.pending:
            return resident
        waiting = [s for s in self._slots.values() if s.pending]
        if not waiting:
            self._cond.wait(1.0)
            return None
        if resident is not None and resident.users > 0:
            idle_for = time.monotonic() - self._last_served
            if idle_for < self.switch_grace_s:  # its callers may be about to send more
                self._cond.wait(self.switch_grace_s - idle_for)
                return None
        return min(waiting, key=lambda s: s.pending[0].enqueued_at)

    def _serve(self, slot: ModelSlot) -> None:
        if self._resident is not slot:
            with self._cond:
                self._unload_locked()
            try:
                engine = slot.loader()
            except ModelError as exc:
                self._fail_slot(slot, exc)
                return
            except Exception as exc:
                self._fail_slot(slot, FatalModelError(f"could not load {slot.label}: {type(exc).__name__}: {exc}"))
                return
            with self._cond:
                self._resident, self._engine = slot, engine
                slot.loads += 1
        assert self._engine is not None
        with self._cond:
            pending = list(slot.pending)
        if not pending:
            return
        selection_error: ModelError | None = None
        try:
            batch = self._engine.select_batch(pending) or pending[:1]
        except Exception as exc:
            batch, selection_error = pending[:1], TransientModelError(f"{type(exc).__name__}: {exc}")
        with self._cond:
            chosen = {id(c) for c in batch}
            slot.pending = [c for c in slot.pending if id(c) not in chosen]
            slot.batch_sizes.append(len(batch))
            batch = [c for c in batch if not c.abandoned]  # given back while it was being chosen
            clear_abort = getattr(self._engine, "clear_abort", None)
            if batch and callable(clear_abort):  # a stop asked before this batch was chosen is over
                clear_abort()
        if not batch:
            return
        if selection_error is not None:
            self._resolve_all(batch, [selection_error])
            return
        try:
            outcomes: Sequence[GenerateResult | ModelError] = self._engine.run_batch(batch)
        except Exception as exc:
            outcomes = [TransientModelError(f"{type(exc).__name__}: {exc}")]
        self._resolve_all(batch, list(outcomes))

    @staticmethod
    def _resolve_all(batch: Sequence[PendingCall], outcomes: list[Any]) -> None:
        if len(outcomes) == 1 and len(batch) > 1:
            outcomes = outcomes * len(batch)
        for call, outcome in zip(batch, outcomes, strict=True):
            call.resolve(outcome)

    def _fail_slot(self, slot: ModelSlot, error: ModelError) -> None:
        with self._cond:
            slot.load_error = error
            calls, slot.pending = slot.pending, []
        for call in calls:
            call.resolve(error)

    def _unload_locked(self) -> None:
        engine, self._engine, self._resident = self._engine, None, None
        if engine is not None:
            engine.unload()
            del engine
            gc.collect()


_host: ModelHost | None = None
_host_lock = threading.Lock()


def get_host() -> ModelHost:
    """The process-wide host (created on first use)."""
    global _host
    with _host_lock:
        if _host is None:
            _host = ModelHost()
        return _host
