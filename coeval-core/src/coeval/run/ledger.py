"""Calls and spend per model: counted as items finish, added into ``meta.json``, and
recounted from the records when a killed process could not add its own."""

from __future__ import annotations

import contextlib
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from typing import Any

from coeval.phases.ids import CALLER_FIELDS
from coeval.scheduler import Scheduler, WorkOutcome
from coeval.storage.records import match_every_line
from coeval.storage.run_folder import RunFolder, loads_record

__all__ = ["Ledger", "recount_lost_calls", "written_calls"]

#: The record field naming the model whose calls a record of each phase accounts for.
_CALLER_FIELD = CALLER_FIELDS


#: How every ok record of ours ends, its attempts and cost captured (:data:`OK_TAIL`).
_PAID_TAIL = re.compile(
    rb'"status": "ok", "attempts": (\d+), "usage": \{"input_tokens": \d+, "output_tokens": \d+\}'
    rb'(?:, "cost_usd": ([-+0-9.eE]+|null))?\}$', re.M)


def _caller_head(field: str) -> re.Pattern[bytes]:
    """A record's start as our writer lays it out: the id, then only plain string (or
    null) fields up to ``field``, whose value is captured: so it is the record's own."""
    return re.compile(rb'\n\{"id": "[^"\\\n]*", (?:"[a-z_]+": (?:"[^"\\\n]*"|null), )*?"'
                      + field.encode() + rb'": "([^"\\\n]*)"')


_HEADS = {phase: _caller_head(field) for phase, field in _CALLER_FIELD.items()}


def written_calls(run: RunFolder) -> tuple[Counter[str], defaultdict[str, float]]:
    """Calls and spend per model that the records of phases 3-5 account for (superseded
    lines included: each was paid for). A lower bound of what the folder's runs spent.

    A file whose every line is an ok record in our writer's layout is read with two regular
    expressions (a folder of millions of records in seconds); any other is parsed line by
    line, with the same result."""
    calls: Counter[str] = Counter()
    spend: defaultdict[str, float] = defaultdict(float)
    for phase, field in _CALLER_FIELD.items():
        for path in run.jsonl_files(phase):
            try:
                data = path.read_bytes()
            except FileNotFoundError:  # removed since listed
                continue
            found = match_every_line((_HEADS[phase], _PAID_TAIL), data)
            if found is None:
                _parse_calls(data, field, calls, spend)
                continue
            for model, (attempts, cost) in found:
                name = model.decode()
                calls[name] += int(attempts)
                if cost and cost != b"null":
                    with contextlib.suppress(ValueError):
                        spend[name] += max(0.0, float(cost))
    return calls, spend


def _parse_calls(data: bytes, field: str, calls: Counter[str], spend: defaultdict[str, float]) -> None:
    for line in data.split(b"\n"):
        try:
            rec = loads_record(line)
        except ValueError:  # a cut or garbled line (blank lines too)
            continue
        model = rec.get(field) if isinstance(rec, dict) else None
        if not isinstance(model, str):
            continue
        with contextlib.suppress(TypeError, ValueError):
            calls[model] += max(0, int(rec.get("attempts") or 0))
        with contextlib.suppress(TypeError, ValueError):
            spend[model] += max(0.0, float(rec.get("cost_usd") or 0.0))


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
