"""Helpers shared by the record-writing phases (3-5)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Generic, TypeVar

from coeval.scheduler.work import WorkItem

__all__ = ["LazyItems", "mode_refusal"]

S = TypeVar("S")


class LazyItems(Generic[S]):
    """A sized iterable of work items built one at a time from light specs, so a phase of a
    million judge calls never holds a million rendered prompts."""

    def __init__(self, specs: Sequence[S], build: Callable[[S], WorkItem]) -> None:
        self._specs = specs
        self._build = build

    def __len__(self) -> int:
        return len(self._specs)

    def __iter__(self) -> Iterator[WorkItem]:
        for spec in self._specs:
            yield self._build(spec)

    def __bool__(self) -> bool:
        return bool(self._specs)


def mode_refusal(phase: str, what: str) -> str:
    return (
        f"{phase} is New but {what} already has records. New never appends to or overwrites "
        "earlier results: use Extend to fill only what is missing, Model to add only new models, "
        "Keep to reuse them, or a new experiment id to start over"
    )
