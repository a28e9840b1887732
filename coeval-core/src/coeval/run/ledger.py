"""Calls and spend per model: written to the call ledger (``calls.jsonl``,
:mod:`coeval.storage.call_ledger`) before each call is sent and after it returns, added
into ``meta.json`` as they happen, and reconciled from the ledger when a process starts
alone in the folder (a killed one could not add its own, and had calls in flight)."""

from __future__ import annotations

import contextlib
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from typing import Any

from coeval.phase_ids import CALLER_FIELDS
from coeval.record_schema import ATTEMPTS, COST_USD
from coeval.run.result import RunError
from coeval.scheduler import Scheduler, WorkOutcome
from coeval.storage.call_ledger import (
    CallLedger,
    LedgerError,
    carry_counts,
    ledger_path,
    read_ledger,
    settle_open_calls,
)
from coeval.storage.records import match_every_line
from coeval.storage.run_folder import RunFolder, loads_record

__all__ = ["Ledger", "reconcile_ledger", "recount_lost_calls", "written_calls"]

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
            calls[model] += max(0, int(rec.get(ATTEMPTS) or 0))
        with contextlib.suppress(TypeError, ValueError):
            spend[model] += max(0.0, float(rec.get(COST_USD) or 0.0))


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


def reconcile_ledger(run: RunFolder, meta: dict[str, Any], log: Any, *, killed_before: bool) -> dict[str, Any]:
    """Before a process alone in the folder makes calls: settle the calls a killed process
    left open (at their estimate: they may have been made) and make ``meta.json``'s calls
    and spend the ledger's. A run from before the ledger starts one with the counts it has
    (raised first to what its records account for, if a process was killed)."""
    path = ledger_path(run.root)
    if not (path.exists() or path.is_symlink()):  # a link in its place: refused by read_ledger
        if killed_before:
            meta = recount_lost_calls(run, meta, log)
        carry_counts(path, dict(meta.get("calls") or {}), dict(meta.get("spend_usd") or {}))
        return meta
    try:
        totals = read_ledger(path)
    except LedgerError as exc:
        raise RunError(str(exc)) from None
    settled = settle_open_calls(path, totals)
    calls = {k: v for k, v in totals.calls.items() if v}
    spend = {k: v for k, v in totals.spend_by_model().items() if v}
    if settled:
        log.warning("calls in flight when a process stopped counted as made, at their estimated cost",
                    calls=settled)
    old_calls = {k: int(v) for k, v in (meta.get("calls") or {}).items() if v}
    old_spend = {k: round(float(v), 10) for k, v in (meta.get("spend_usd") or {}).items() if v}
    if calls == old_calls and all(abs(spend.get(k, 0.0) - old_spend.get(k, 0.0)) < 1e-9
                                  for k in set(spend) | set(old_spend)):
        return meta

    def change(m: dict[str, Any]) -> None:
        m["calls"] = calls
        m["spend_usd"] = spend

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
    """This process's calls: each written to the call ledger before it is sent and after it
    returns (the scheduler's journal), and their counts flushed into ``meta.json`` as
    increments so that shards sharing a folder add up instead of overwriting each other."""

    def __init__(self, run: RunFolder, process: str, scheduler: Scheduler | None = None, *,
                 calls_before: Mapping[str, int] | None = None, spend_before_usd: float = 0.0,
                 interval_s: float = 2.0) -> None:
        self.run = run
        self.file = CallLedger(ledger_path(run.root), process)
        self._calls: Counter[str] = Counter()
        self._spend: defaultdict[str, float] = defaultdict(float)
        self._last_flush = time.monotonic()
        self.interval_s = interval_s
        #: With a scheduler (shards), each flush also hands it what other processes have
        #: added to ``meta.json`` since, so quotas and the budget hold across shards.
        self.scheduler = scheduler
        self._known_calls: Counter[str] = Counter(calls_before or {})
        self._known_spend = float(spend_before_usd)

    # the scheduler's journal (coeval.scheduler.admission.CallJournal)
    def started(self, model: str, phase: str, item: str, estimate_usd: float) -> str:
        call = self.file.started(model, phase, item, estimate_usd)
        self._calls[model] += 1
        return call

    def ended(self, call: str, model: str, cost_usd: float | None) -> None:
        self.file.ended(call, cost_usd)
        if cost_usd:
            self._spend[model] += float(cost_usd)

    def not_sent(self, call: str, model: str) -> None:
        self.file.not_sent(call)
        self._calls[model] -= 1

    def add(self, outcome: WorkOutcome) -> None:
        """An item was booked (its calls are counted as they start and end)."""
        if time.monotonic() - self._last_flush > self.interval_s:
            self.flush()

    def close(self) -> None:
        """Write what the ledger held back (a full disk), if it can now, and flush."""
        self.file.close()
        self.flush()
    def flush_quietly(self) -> None:
        """:meth:`flush`, leaving the counts for the next flush when ``meta.json`` cannot be
        written now (a full disk): the ledger has them, and the error that stopped the
        run is the one to report."""
        with contextlib.suppress(OSError):
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
