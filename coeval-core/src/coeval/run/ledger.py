"""Calls and spend per model: counted as items finish, added into ``meta.json``, and
recounted from the records when a killed process could not add its own."""

from __future__ import annotations

import contextlib
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from typing import Any

from coeval.scheduler import Scheduler, WorkOutcome
from coeval.storage.run_folder import RunFolder, iter_jsonl
from coeval.phases.ids import CALLER_FIELDS

__all__ = ["Ledger", "recount_lost_calls", "written_calls"]

#: The record field naming the model whose calls a record of each phase accounts for.
_CALLER_FIELD = CALLER_FIELDS


def written_calls(run: RunFolder) -> tuple[Counter[str], defaultdict[str, float]]:
    """Calls and spend per model that the records of phases 3-5 account for (superseded
    lines included: each was paid for). A lower bound of what the folder's runs spent."""
    calls: Counter[str] = Counter()
    spend: defaultdict[str, float] = defaultdict(float)
    for phase, field in _CALLER_FIELD.items():
        for path in run.jsonl_files(phase):
            for rec in iter_jsonl(path):
                model = rec.get(field)
                if not isinstance(model, str):
                    continue
                with contextlib.suppress(TypeError, ValueError):
                    calls[model] += max(0, int(rec.get("attempts") or 0))
                with contextlib.suppress(TypeError, ValueError):
                    spend[model] += max(0.0, float(rec.get("cost_usd") or 0.0))
    return calls, spend


def recount_lost_calls(run: RunFolder, meta: dict[str, Any], log: Any) -> dict[str, Any]:
    """A killed process loses the calls it had not yet added to ``meta.json``; its
    records still say what they cost. Raise the counts to what the records account for
    (less what a fork copied), so quotas and budgets hold across a crash. Only while the
    folder is held alone: a shard's unsaved counts would be counted twice."""
    fork = meta.get("forked_from")
    if fork and "calls_copied" not in fork:
        return meta  # forked by an older version: copied calls unknown, keep the counts
    calls, spend = written_calls(run)
    for k, v in ((fork or {}).get("calls_copied") or {}).items():
        calls[k] -= int(v)
    for k, usd in ((fork or {}).get("spend_copied_usd") or {}).items():
        spend[k] -= float(usd)
    low_calls = {k: v for k, v in calls.items() if v > int((meta.get("calls") or {}).get(k, 0))}
    low_spend = {k: round(v, 10) for k, v in spend.items()
                 if v > float((meta.get("spend_usd") or {}).get(k, 0.0)) + 1e-9}
    if not low_calls and not low_spend:
        return meta

    def change(m: dict[str, Any]) -> None:
        m.setdefault("calls", {}).update(low_calls)
        m.setdefault("spend_usd", {}).update(low_spend)

    log.warning("calls recorded by a stopped process were missing from meta.json; counted them",
                calls=low_calls, spend_usd=low_spend or None)
    return run.update_meta(change)


def _adder(calls: Counter[str], spend: Mapping[str, float]) -> Callable[[dict[str, Any]], None]:
    """The change that adds ``calls`` and ``spend`` into ``meta.json``."""

    def change(meta: dict[str, Any]) -> None:
        c = meta.setdefault("calls", {})
        for k, v in calls.items():
            c[k] = int(c.get(k, 0)) + v
        paid = meta.setdefault("spend_usd", {})
        for k, usd in spend.items():
            paid[k] = round(float(paid.get(k, 0.0)) + usd, 10)

    return change


class Ledger:
    """Calls and spend per model, flushed into ``meta.json`` as increments so that shards
    sharing a folder add up instead of overwriting each other."""

    def __init__(self, run: RunFolder, scheduler: Scheduler | None = None, *,
                 calls_before: Mapping[str, int] | None = None, spend_before_usd: float = 0.0,
                 interval_s: float = 2.0) -> None:
        self.run = run
        self._calls: Counter[str] = Counter()
        self._spend: defaultdict[str, float] = defaultdict(float)
        self._last_flush = time.monotonic()
        self.interval_s = interval_s
        #: With a scheduler (shards), each flush also hands it what other processes have
        #: added to ``meta.json`` since, so quotas and the budget hold across shards.
        self.scheduler = scheduler
        self._known_calls: Counter[str] = Counter(calls_before or {})
        self._known_spend = float(spend_before_usd)

    def add(self, outcome: WorkOutcome) -> None:
        name = outcome.item.model.name
        self._calls[name] += int(outcome.attempts)
        if outcome.cost_usd:
            self._spend[name] += float(outcome.cost_usd)
        if time.monotonic() - self._last_flush > self.interval_s:
            self.flush()

    def flush(self) -> None:
        self._last_flush = time.monotonic()
        if not self._calls and not self._spend:
            return
        calls, spend = Counter(self._calls), dict(self._spend)
        self._calls.clear()
        self._spend.clear()
        try:
            meta = self.run.update_meta(_adder(calls, spend))
        except BaseException:  # meta.json not written (a full disk): keep them for the next flush
            self._calls.update(calls)
            for k, usd in spend.items():
                self._spend[k] += usd
            raise
        if self.scheduler is not None:
            self._learn_others(meta, calls, sum(spend.values()))

    def _learn_others(self, meta: Mapping[str, Any], own_calls: Counter[str], own_spend: float) -> None:
        sched = self.scheduler
        assert sched is not None
        self._known_calls.update(own_calls)
        self._known_spend += own_spend
        for k, total in (meta.get("calls") or {}).items():
            extra = int(total) - self._known_calls.get(k, 0)
            if extra > 0:
                sched.calls[k] += extra
                self._known_calls[k] += extra
        extra_usd = float(sum((meta.get("spend_usd") or {}).values())) - self._known_spend
        if extra_usd > 1e-9:
            sched.spend_usd += extra_usd
            self._known_spend += extra_usd
