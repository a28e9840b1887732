"""Helpers shared by the record-writing phases (3-5)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from typing import Generic, TypeVar

from coeval.scheduler.work import WorkItem

__all__ = ["CountStopped", "LazyItems", "LazySpecs", "Total", "count_later", "mode_refusal", "raise_if_stopped", "then"]

S = TypeVar("S")
T = TypeVar("T")
U = TypeVar("U")

#: A count of items: known now, or still being counted in a thread (the scheduler starts the
#: items at once and takes the total for progress and ETA when it arrives).
Total = int | Future[int]


class CountStopped(Exception):
    """A count given up: the phase it was for has ended."""


def raise_if_stopped(stop: threading.Event | None) -> None:
    """Give up a count (:class:`CountStopped`) once ``stop`` is set: its phase has ended."""
    if stop is not None and stop.is_set():
        raise CountStopped()


class _Deferred(Future[T]):
    """A future whose work starts when first waited for (:meth:`result`), or is started
    (:meth:`begin`): a count nobody reads costs nothing."""

    def __init__(self, begin: Callable[[], None]) -> None:
        super().__init__()
        self._begin: Callable[[], None] | None = begin
        self._begin_lock = threading.Lock()

    def begin(self) -> None:
        with self._begin_lock:
            begin, self._begin = self._begin, None
        if begin is not None:
            begin()

    def result(self, timeout: float | None = None) -> T:
        self.begin()
        return super().result(timeout)


def count_later(count: Callable[[], T], start: threading.Event | None = None, wait_s: float = 1.0,
                *, deferred: bool = False) -> Future[T]:
    """``count()`` run in a daemon thread, its result (or error) on the returned future: a
    phase's first call need not wait for the pass that counts what the phase owes. With
    ``start``, the count waits for it (the phase's first finished call), at most ``wait_s``
    seconds, so that it does not compete with the first calls for the interpreter.
    ``deferred``: the count starts only when its result is waited for (a pipelined pass,
    whose total nobody reads unless an evaluator asks for it)."""

    def work() -> None:
        if not future.set_running_or_notify_cancel():
            return
        if start is not None:
            start.wait(wait_s)
        try:
            future.set_result(count())
        except BaseException as exc:
            future.set_exception(exc)

    thread = threading.Thread(target=work, name="coeval-count", daemon=True)
    future: Future[T] = _Deferred(thread.start) if deferred else Future()
    if not deferred:
        thread.start()
    return future


def then(future: Future[T], fn: Callable[[T], U]) -> Future[U]:
    """A future of ``fn(future's result)``."""
    out: Future[U] = _Deferred(future.begin) if isinstance(future, _Deferred) else Future()
    out.set_running_or_notify_cancel()

    def done(f: Future[T]) -> None:
        try:
            out.set_result(fn(f.result()))
        except BaseException as exc:
            out.set_exception(exc)

    future.add_done_callback(done)
    return out


def _known(total: Total) -> int | None:
    if isinstance(total, Future):
        return total.result() if total.done() and total.exception() is None else None
    return total


def _size(total: Total) -> int:
    return total.result() if isinstance(total, Future) else total


def untaken(items: Iterable[WorkItem], taken: set[str]) -> Iterator[WorkItem]:
    """``items`` whose key is not in ``taken``, each added to it as it goes: what a
    pipelined pass hands the scheduler (see :mod:`coeval.run.pipelining`). Items that can
    skip a taken key before building themselves (``untaken``) do."""
    skipping = getattr(items, "untaken", None)
    return skipping(taken) if skipping is not None else _built_untaken(items, taken)


def _built_untaken(items: Iterable[WorkItem], taken: set[str]) -> Iterator[WorkItem]:
    for item in items:
        if item.key not in taken:
            taken.add(item.key)
            yield item


class LazyItems(Generic[S]):
    """A sized iterable of work items built one at a time from light specs, so a phase of a
    million judge calls never holds a million rendered prompts.

    ``specs`` is a sequence, or a function that lists them afresh (a generator) with their
    ``total``: then not even the specs are held, and the scheduler's first call goes out
    while the later ones are still to be listed. A total still being counted (a future, see
    :func:`count_later`) is ``total_later``: the scheduler starts at once and learns it
    when it comes; ``len`` waits for it. ``key`` gives a spec's item key without building
    the item, so a pipelined pass skips what earlier passes took before rendering its
    prompt (:meth:`untaken`)."""

    def __init__(self, specs: Sequence[S] | Callable[[], Iterable[S]], build: Callable[[S], WorkItem],
                 total: Total | None = None, key: Callable[[S], str] | None = None) -> None:
        if callable(specs):
            if total is None:
                raise TypeError("LazyItems over a spec generator needs its total")
            self._specs: Sequence[S] | Callable[[], Iterable[S]] = specs
            self._total: Total = total
        else:
            self._specs = specs
            later = getattr(specs, "total_later", None)
            self._total = later if isinstance(later, Future) else len(specs)
        self._build = build
        self._key = key

    @property
    def total_later(self) -> Future[int] | None:
        """The total while it is being counted (None once it is known)."""
        return self._total if isinstance(self._total, Future) and _known(self._total) is None else None

    def __len__(self) -> int:
        return _size(self._total)

    def __iter__(self) -> Iterator[WorkItem]:
        specs = self._specs() if callable(self._specs) else self._specs
        for spec in specs:
            yield self._build(spec)

    def untaken(self, taken: set[str]) -> Iterator[WorkItem]:
        """The items whose key is not in ``taken``, each added to it as it goes; with a
        ``key``, a taken item is skipped before it is built."""
        key = self._key
        if key is None:
            yield from _built_untaken(self, taken)
            return
        specs = self._specs() if callable(self._specs) else self._specs
        build = self._build
        for spec in specs:
            spec_key = key(spec)
            if spec_key not in taken:
                taken.add(spec_key)
                yield build(spec)

    def __bool__(self) -> bool:
        known = _known(self._total)
        return known is None or known > 0  # still counted: there may be some


class LazySpecs(Sequence[S]):
    """A sequence of specs listed afresh by ``source`` on each pass, ``total`` of them: what
    an evaluator is handed as its scorings, so a phase of millions holds none of them. An
    index (which the built-in evaluators never use) lists them once and keeps the list.
    ``total`` may still be being counted (a future): ``total_later`` hands it on to the
    :class:`LazyItems` built over these specs, and ``len`` is the count, or, when a pass
    over the specs has ended first (every one listed, or the phase stopped and dropped the
    rest), the number that pass listed: a stopped phase does not wait for its count."""

    def __init__(self, source: Callable[[], Iterable[S]], total: Total) -> None:
        self.source = source
        self._total = total
        self._held: list[S] | None = None
        self._listed: int | None = None  # the most a finished pass listed

    @property
    def total_later(self) -> Future[int] | None:
        return self._total if isinstance(self._total, Future) and _known(self._total) is None else None

    def __len__(self) -> int:
        if isinstance(self._total, Future) and _known(self._total) is None:
            if self._held is not None:
                self._total = len(self._held)
            elif self._listed is not None:
                self._total = self._listed
        return _size(self._total)

    def __iter__(self) -> Iterator[S]:
        if self._held is not None:
            return iter(self._held)
        if isinstance(self._total, Future):
            return self._listing()
        return iter(self.source())

    def _listing(self) -> Iterator[S]:
        n = 0
        try:
            for spec in self.source():
                n += 1
                yield spec
        finally:  # exhausted, or dropped by a phase that stopped
            self._listed = max(self._listed or 0, n)

    def __getitem__(self, index: int | slice) -> S | Sequence[S]:  # type: ignore[override]
        if self._held is None:
            self._held = list(self.source())
        return self._held[index]

    def __bool__(self) -> bool:
        known = _known(self._total)
        return known is None or known > 0


def mode_refusal(phase: str, what: str) -> str:
    return (
        f"{phase} is New but {what} already has records. New never appends to or overwrites "
        "earlier results: use Extend to fill only what is missing, Model to add only new models, "
        "Keep to reuse them, or a new experiment id to start over"
    )
