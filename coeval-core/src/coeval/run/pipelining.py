"""Pipelined phases: a datapoint is answered as soon as it exists, and an answer judged as
soon as it exists.

Phases 3-5 normally run one after another, so every phase waits for the slowest call of
the one before (under heavy-tailed latency, seconds per phase in which few calls are in
flight). Pipelined, they run at once: the downstream phase runs a *pass* -- an ordinary
run of the phase in Extend mode, which takes what its upstream phase has written so far
and is not done yet -- each time the upstream phase has written more, and a last pass once
the upstream phase has ended. Records, modes, quotas, budgets, ``--limit`` and resume are
those of the phases run one by one; the phases' calls share each connection's limit.

Only phases in New or Extend mode are pipelined (Keep and Model decide from what exists
when the phase starts), never a run with a batch executor (a batch keeps its barrier) or a
shard (``--only-models``: other processes write the same folder).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable, Iterator, Sequence
from typing import Any

import attrs

from coeval.phases._items import untaken
from coeval.phases.base import Phase, PhaseResult, WriterPool
from coeval.phases.run_selection import PIPELINED_MODES, PIPELINED_PHASES
from coeval.scheduler import WorkItem

__all__ = ["LISTING_PASSES", "Pass", "Passes", "Upstream", "pipeline_group", "untaken"]

#: A downstream pass starts once its upstream has written this share more records than at
#: the last pass's start (at least one): each pass lists what the phase owes afresh, so
#: passes are spaced in proportion to the work done.
PASS_GROWTH = 0.25
#: How often a downstream phase between passes looks at its upstream's count.
POLL_S = 0.05
#: Passes of one phase that may be listing items at once. A pass that has handed the
#: scheduler its last item does not count: it only waits for its calls in flight, and under
#: heavy-tailed latency one slow call held the next pass back while the slots ran dry.
LISTING_PASSES = 2


def pipeline_group(phases: Sequence[Phase], start: int, mode_of: dict[str, str]) -> list[Phase]:
    """The phases from ``phases[start]`` that run at once: consecutive pipelined phases,
    each after the one before it, each in a pipelined mode (at least the first phase)."""
    group = [phases[start]]
    if phases[start].name not in PIPELINED_PHASES or mode_of[phases[start].name] not in PIPELINED_MODES:
        return group
    for phase in phases[start + 1:]:
        follows = group[-1].name in tuple(getattr(phase, "after", ()))
        if phase.name not in PIPELINED_PHASES or mode_of[phase.name] not in PIPELINED_MODES or not follows:
            break
        group.append(phase)
    return group


class Upstream:
    """What a downstream phase knows of the phase that feeds it: how many records it has
    written so far, and whether it has ended (and how)."""

    def __init__(self, result: PhaseResult) -> None:
        self.result = result
        self.ended = asyncio.Event()
        self.failed = False

    def written(self) -> int:
        return self.result.written + self.result.failed

    def end(self, *, failed: bool) -> None:
        self.failed = failed
        self.ended.set()

    async def grown(self, since: int) -> None:
        """Return once the upstream phase has written enough since ``since`` for another
        pass to be worth listing, or has ended."""
        wanted = since + max(1, int(since * PASS_GROWTH))
        while not self.ended.is_set() and self.written() < wanted:
            await asyncio.sleep(POLL_S)


@attrs.define
class Passes:
    """What the passes of one pipelined phase share: its writers (one per file, whichever
    pass writes), and the keys of every item a pass has handed to the scheduler. A pass
    lists what it owes from the records it read when it started, so an item an earlier pass
    is still running, or finished since, is listed again: it is skipped, as each item runs
    once per phase when phases run one by one."""

    writers: WriterPool
    taken: set[str] = attrs.field(factory=set)
    #: Set when a pass has listed its last item (or ended): the loop may start another.
    changed: asyncio.Event = attrs.field(factory=asyncio.Event)

    def listed_by(self, current: Pass, items: Iterable[WorkItem]) -> Iterator[WorkItem]:
        """``items`` as ``current`` hands them to the scheduler; once the last is taken, the
        pass no longer holds back the next one."""
        current.listed = False
        yield from items
        current.listed = True
        self.changed.set()

    def listing(self, running: Sequence[Pass]) -> int:
        """How many of ``running`` still have items to list."""
        return sum(1 for p in running if not p.listed and not p.task.done())


class Pass:
    """One pass of a pipelined phase: its task, and whether it has listed every item it
    had to hand the scheduler (then only its calls in flight are left)."""

    __slots__ = ("listed", "task")

    def __init__(self, run: Callable[[Pass], Coroutine[Any, Any, None]]) -> None:
        self.listed = False
        self.task: asyncio.Task[None] = asyncio.ensure_future(run(self))
