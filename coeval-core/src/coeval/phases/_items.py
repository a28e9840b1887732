"""Helpers shared by the record-writing phases (3-5)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Generic, TypeVar

from coeval.scheduler.work import WorkItem

__all__ = ["LazyItems", "LazySpecs", "mode_refusal"]

S = TypeVar("S")


class LazyItems(Generic[S]):
    """A sized iterable of work items built one at a time from light specs, so a phase of a
    million judge calls never holds a million rendered prompts.

    ``specs`` is a sequence, or a function that lists them afresh (a generator) with their
    ``total`` counted beforehand: then not even the specs are held, and the scheduler's
    first call goes out while the later ones are still to be listed."""

    def __init__(self, specs: Sequence[S] | Callable[[], Iterable[S]], build: Callable[[S], WorkItem],
                 total: int | None = None) -> None:
        if callable(specs):
            if total is None:
                raise TypeError("LazyItems over a spec generator needs its total")
            self._specs: Sequence[S] | Callable[[], Iterable[S]] = specs
            self._total = total
        else:
            self._specs = specs
            self._total = len(specs)
        self._build = build

    def __len__(self) -> int:
        return self._total

    def __iter__(self) -> Iterator[WorkItem]:
        specs = self._specs() if callable(self._specs) else self._specs
        for spec in specs:
            yield self._build(spec)

    def __bool__(self) -> bool:
        return self._total > 0


class LazySpecs(Sequence[S]):
    """A sequence of specs listed afresh by ``source`` on each pass, ``total`` of them: what
    an evaluator is handed as its scorings, so a phase of millions holds none of them. An
    index (which the built-in evaluators never use) lists them once and keeps the list."""

    def __init__(self, source: Callable[[], Iterable[S]], total: int) -> None:
        self.source = source
        self._total = total
        self._held: list[S] | None = None

    def __len__(self) -> int:
        return self._total

    def __iter__(self) -> Iterator[S]:
        return iter(self._held) if self._held is not None else iter(self.source())

    def __getitem__(self, index: int | slice) -> S | Sequence[S]:  # type: ignore[override]
        if self._held is None:
            self._held = list(self.source())
        return self._held[index]

    def __bool__(self) -> bool:
        return self._total > 0


def mode_refusal(phase: str, what: str) -> str:
    return (
        f"{phase} is New but {what} already has records. New never appends to or overwrites "
        "earlier results: use Extend to fill only what is missing, Model to add only new models, "
        "Keep to reuse them, or a new experiment id to start over"
    )
