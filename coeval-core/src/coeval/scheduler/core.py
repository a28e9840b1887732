"""The scheduler (first version: fixed concurrency per connection, simple retries).

Contract used by the phases -- keep it stable:

    scheduler = Scheduler(interfaces, limits, progress=...)
    stats = await scheduler.run(phase_id, items)

``interfaces`` maps model name -> a ready :class:`~coeval.interfaces.Interface`. ``run``
returns when every item has had its ``on_done`` called.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable, Mapping

import attrs

from coeval.credentials import redact
from coeval.interfaces.base import Interface, ModelError, Usage
from coeval.scheduler.work import OutputParseError, WorkItem, WorkOutcome


@attrs.define
class SchedulerLimits:
    """Run-wide limits. ``quota`` is calls per model (None = unlimited)."""

    generation_retries: int = 2  # extra attempts for unparseable output
    max_attempts: int = 6  # hard bound on calls per item, all causes together
    quota: Mapping[str, int | None] = attrs.field(factory=dict)
    budget_usd: float | None = None


@attrs.define
class SchedulerStats:
    ok: int = 0
    failed: int = 0
    skipped: int = 0
    calls: Counter[str] = attrs.field(factory=Counter)  # per model
    spend_usd: float = 0.0


class Scheduler:
    def __init__(self, interfaces: Mapping[str, Interface], limits: SchedulerLimits | None = None) -> None:
        self.interfaces = interfaces
        self.limits = limits or SchedulerLimits()
        self.calls: Counter[str] = Counter()

    async def run(self, phase_id: str, items: Iterable[WorkItem]) -> SchedulerStats:
        stats = SchedulerStats()
        sems: dict[str, asyncio.Semaphore] = {}

        async def one(item: WorkItem) -> None:
            iface = self.interfaces[item.model.name]
            sem = sems.setdefault(iface.connection_key(), asyncio.Semaphore(iface.default_concurrency))
            async with sem:
                outcome = await self._attempt(item, iface)
            item.on_done(outcome)
            setattr(stats, outcome.status, getattr(stats, outcome.status) + 1)

        await asyncio.gather(*(one(i) for i in items))
        stats.calls = Counter(self.calls)
        return stats

    async def _attempt(self, item: WorkItem, iface: Interface) -> WorkOutcome:
        attempts = 0
        parse_failures = 0
        usage = Usage()
        last_kind, last_error = None, None
        while attempts < self.limits.max_attempts:
            cap = self.limits.quota.get(item.model.name)
            if cap is not None and self.calls[item.model.name] >= cap:
                return WorkOutcome(item, "skipped", error_kind="quota", attempts=attempts, usage=usage)
            attempts += 1
            self.calls[item.model.name] += 1
            try:
                result = await iface.generate(item.request)
            except Exception as exc:  # noqa: BLE001 - classified below
                err = iface.classify_error(exc)
                last_kind, last_error = err.kind, redact(str(err))
                if not err.retryable:
                    break
                await asyncio.sleep(min(err.retry_after or 0.05 * attempts, 5.0))
                continue
            usage = Usage(usage.input_tokens + result.usage.input_tokens, usage.output_tokens + result.usage.output_tokens)
            try:
                value = item.parse(result) if item.parse else result.text
            except OutputParseError as exc:
                parse_failures += 1
                last_kind, last_error = "unparseable", redact(str(exc))
                if parse_failures > self.limits.generation_retries:
                    break
                continue
            return WorkOutcome(item, "ok", value=value, result=result, attempts=attempts, usage=usage,
                               cost_usd=result.cost_usd)
        return WorkOutcome(item, "failed", error_kind=last_kind, error=last_error, attempts=attempts, usage=usage)


__all__ = ["ModelError", "Scheduler", "SchedulerLimits", "SchedulerStats"]
