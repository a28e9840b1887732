"""What a stopped run says: which limit stopped it and what is left, and how many items a
phase stopped early leaves (its summary line and ``--json`` count every missing item, and
blame the cause that stopped it, not a Ctrl-C nobody pressed)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from coeval.config.model import Config
from coeval.phases.base import PhaseResult
from coeval.scheduler.core import Scheduler
from coeval.scheduler.phase_run import UNWRITTEN

__all__ = ["LIMIT_CAUSES", "count_unlisted", "limit_message", "stop_the_others", "stopped_with"]

#: Skip causes that are a graceful stop, not a failure.
LIMIT_CAUSES = frozenset({"quota", "budget"})


def _dollars(usd: float) -> str:
    return f"${usd:,.4f}" if usd < 1 else f"${usd:,.2f}"


def limit_message(skip_causes: Counter[str], config: Config, calls: Mapping[str, int], spend_usd: float) -> str:
    """Which limit stopped the run, where it stands, and what is left to do."""
    exp = config.experiment
    limits, raise_ = [], []
    if skip_causes["budget"] and exp.budget_usd is not None:
        limits.append(f"the budget (budget_usd {_dollars(exp.budget_usd)}, {_dollars(spend_usd)} spent)")
        raise_.append("experiment.budget_usd")
    if skip_causes["quota"]:
        for name, quota in sorted(exp.quota.items()):
            if quota.max_calls is not None and calls.get(name, 0) >= quota.max_calls:
                limits.append(f"the quota of {name} (max_calls {quota.max_calls}, all made)")
                raise_.append(f"experiment.quota.{name}.max_calls")
    left = sum(skip_causes[c] for c in LIMIT_CAUSES)
    return (f"stopped by {' and '.join(limits) or 'a quota or the budget'}: {left} items left (and the work that "
            f"builds on them); raise {' and '.join(raise_) or 'it'} and run with --continue to make them")


def count_unlisted(tracker: Any, result: PhaseResult, *, stop_requested: bool) -> None:
    """A pipelined phase's total for its summary line. Run to its end, the items its
    passes took (the plan's count was an estimate). Stopped (SIGTERM, Ctrl-C, a full
    disk), the plan's count too: the items no pass listed yet are left, like those
    listed and not run, so the line says how many are missing."""
    taken = tracker.done + tracker.skipped
    if not stop_requested and result.status not in ("interrupted", "failed"):
        tracker.total = taken
        return
    left = tracker.total - taken
    if left > 0:
        reason = "cancelled" if stop_requested else UNWRITTEN
        tracker.items_skipped(left, reason)
        result.skipped += left
        result.skip_causes[reason] += left
    tracker.total = max(tracker.total, taken)


async def stop_the_others(scheduler: Scheduler | None, tasks: Iterable[asyncio.Future[Any]]) -> None:
    """A phase's error (a full disk) stops the phases running beside it: their items are
    left for that reason (a record could not be written), then their tasks end."""
    if scheduler is not None:
        scheduler.stop_all(UNWRITTEN)
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def stopped_with(results: Iterable[PhaseResult], error: BaseException) -> None:
    """Phases cancelled because another one's error stopped the run: failed with it, not
    interrupted (no Ctrl-C was pressed)."""
    for result in results:
        if result.status == "interrupted":
            result.status, result.message = "failed", f"stopped with the run: {error}"
