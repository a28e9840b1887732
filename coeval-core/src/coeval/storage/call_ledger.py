"""The call ledger, ``calls.jsonl``: every paid call written down before it is sent.

A record is written once a call has finished; a call in flight when the process is killed
(SIGKILL, a power loss) has no record, yet the provider was paid for it. So each call is
written twice to this append-only file: a *start* line before the request leaves, and an
*end* line with its real cost once it is answered (written with the next start line, or
when the process ends). A start without an end is a call that may have been made: it
counts as made, at its estimated cost, until the next process that holds the folder alone
settles it at that estimate.

The lines (one JSON object each; documented in ``docs/data-format.md``)::

    {"start": "9f2c01d4e5a6-17", "model": "m", "phase": "evaluation", "item": "k", "estimate_usd": 0.002}
    {"end": "9f2c01d4e5a6-17", "cost_usd": 0.0018}
    {"end": "9f2c01d4e5a6-17", "sent": false}
    {"end": "9f2c01d4e5a6-17", "cost_usd": 0.002, "settled": "estimate"}
    {"carried": {"calls": {"m": 40}, "spend_usd": {"m": 0.08}}}

Each line is one ``write(2)`` on an ``O_APPEND`` descriptor, like the records: on disk (in
the OS cache) when the write returns, so a killed process loses none, and lines of shards
sharing the folder never interleave. This module alone reads and writes the format.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import attrs

from coeval.record_schema import (
    CARRIED,
    CARRIED_CALLS,
    CARRIED_SPEND_USD,
    COST_USD,
    END,
    ESTIMATE_USD,
    MODEL,
    SENT,
    SETTLED,
    START,
)
from coeval.storage.run_folder import atomic_write_bytes, cut_partial_last_line
from coeval.storage.safe_files import open_no_follow, read_run_file

__all__ = [
    "LEDGER_NAME",
    "CallLedger",
    "LedgerError",
    "LedgerTotals",
    "carry_counts",
    "drop_bad_lines",
    "ledger_path",
    "read_ledger",
    "settle_open_calls",
]

#: The ledger's file name in the run folder.
LEDGER_NAME = "calls.jsonl"


class LedgerError(ValueError):
    """A line of the ledger that is not one of its shapes (a hand edit, a damaged disk)."""

    def __init__(self, path: Path, line: int, field: str, rule: str) -> None:
        super().__init__(f"{path}:{line}: {field} {rule}; `coeval repair` drops the line")
        self.path, self.line, self.field, self.rule = path, line, field, rule


@attrs.define
class OpenCall:
    """A call whose start was written and whose end was not."""

    model: str
    estimate_usd: float


@attrs.define
class LedgerTotals:
    """What the ledger counts: calls and spend per model, calls still open counted at their
    estimate (they may have been made)."""

    calls: Counter[str] = attrs.field(factory=Counter)
    spend_usd: defaultdict[str, float] = attrs.field(factory=lambda: defaultdict(float))
    open: dict[str, OpenCall] = attrs.field(factory=dict)
    bad_lines: list[LedgerError] = attrs.field(factory=list)

    def spend_by_model(self) -> dict[str, float]:
        return {k: round(v, 10) for k, v in self.spend_usd.items()}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def _count_map(value: Any, *, whole: bool) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and _number(v) and (not whole or isinstance(v, int)) for k, v in value.items())


def _line_problem(obj: Any) -> tuple[str, str] | None:
    """(field, rule) of a line that is not one of the ledger's shapes; None when it is."""
    if not isinstance(obj, dict):
        return "line", "must be a JSON object"
    if START in obj:
        for field, ok, rule in (
            (START, isinstance(obj.get(START), str), "must be a string"),
            (MODEL, isinstance(obj.get(MODEL), str), "must be a string"),
            (ESTIMATE_USD, _number(obj.get(ESTIMATE_USD)), "must be a number of dollars, at least 0"),
        ):
            if not ok:
                return field, rule
        return None
    if END in obj:
        if not isinstance(obj.get(END), str):
            return END, "must be a string"
        cost = obj.get(COST_USD)
        if cost is not None and not _number(cost):
            return COST_USD, "must be a number of dollars, at least 0, or null"
        if SENT in obj and not isinstance(obj[SENT], bool):
            return SENT, "must be true or false"
        return None
    if CARRIED in obj:
        carried = obj[CARRIED]
        if not isinstance(carried, dict):
            return CARRIED, "must be an object"
        if not _count_map(carried.get(CARRIED_CALLS, {}), whole=True):
            return "carried.calls", "must map model names to whole numbers of calls"
        if not _count_map(carried.get(CARRIED_SPEND_USD, {}), whole=False):
            return "carried.spend_usd", "must map model names to dollars"
        return None
    return "line", "must have a 'start', 'end' or 'carried' key"


def read_ledger(path: Path, *, strict: bool = True) -> LedgerTotals:
    """The ledger's totals (empty when there is none). A line that is not one of the
    ledger's shapes raises :class:`LedgerError` (``strict``) or is left out and listed in
    ``bad_lines``. A last line without its newline is a write a kill cut short: its call was
    never sent, so it is not counted."""
    totals = LedgerTotals()
    try:
        data = read_run_file(path, path.parent)  # a FIFO or an outside link: UnsafeRunFile, never a hang
    except FileNotFoundError:
        return totals
    lines = data.split(b"\n")
    lines.pop()  # after the last newline: empty, or a cut write
    starts: dict[str, OpenCall] = {}
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            obj: Any = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            obj = None
            problem: tuple[str, str] | None = ("line", "is not JSON")
        else:
            problem = _line_problem(obj)
        if problem is not None:
            err = LedgerError(path, number, *problem)
            if strict:
                raise err
            totals.bad_lines.append(err)
            continue
        _count(obj, starts, totals)
    totals.open = starts
    for call in starts.values():
        totals.spend_usd[call.model] += call.estimate_usd
    return totals


def _count(obj: dict[str, Any], starts: dict[str, OpenCall], totals: LedgerTotals) -> None:
    if START in obj:
        model = obj[MODEL]
        starts[obj[START]] = OpenCall(model, float(obj[ESTIMATE_USD]))
        totals.calls[model] += 1
    elif END in obj:
        call = starts.pop(obj[END], None)
        if call is None:  # an end whose start is gone (a repaired line): nothing to settle
            return
        if obj.get(SENT) is False:
            totals.calls[call.model] -= 1
        elif obj.get(COST_USD) is not None:
            totals.spend_usd[call.model] += float(obj[COST_USD])
    else:
        carried = obj[CARRIED]
        totals.calls.update({k: int(v) for k, v in (carried.get(CARRIED_CALLS) or {}).items()})
        for k, usd in (carried.get(CARRIED_SPEND_USD) or {}).items():
            totals.spend_usd[k] += float(usd)


def _append(path: Path, lines: list[str]) -> None:
    fd = open_no_follow(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        _write_all(fd, "".join(lines).encode("utf-8"), path)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes, path: Path) -> None:
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError as exc:  # name the file: os.write's errors do not
        raise OSError(exc.errno, exc.strerror, str(path)) from None


def settle_open_calls(path: Path, totals: LedgerTotals) -> int:
    """Close every open call at its estimate (only while the folder is held alone: a
    shard's calls in flight are open too). Returns how many were settled."""
    if not totals.open:
        return 0
    cut_partial_last_line(path)
    _append(path, [json.dumps({END: call, COST_USD: open_.estimate_usd, SETTLED: "estimate"}) + "\n"
                   for call, open_ in totals.open.items()])
    settled = len(totals.open)
    totals.open = {}
    return settled


def carry_counts(path: Path, calls: dict[str, int], spend_usd: dict[str, float]) -> None:
    """Start the ledger of a run made before it had one with the counts it had."""
    calls = {k: int(v) for k, v in calls.items() if int(v) > 0}
    spend_usd = {k: round(float(v), 10) for k, v in spend_usd.items() if float(v) > 0}
    if calls or spend_usd:
        _append(path, [json.dumps({CARRIED: {CARRIED_CALLS: calls, CARRIED_SPEND_USD: spend_usd}}) + "\n"])


def drop_bad_lines(path: Path) -> int:
    """Rewrite the ledger without the lines that are not its shapes (``coeval repair``);
    returns how many went."""
    totals = read_ledger(path, strict=False)
    if not totals.bad_lines:
        return 0
    bad = {e.line for e in totals.bad_lines}
    data = path.read_bytes()
    lines = data.split(b"\n")
    tail = lines.pop()
    kept = [raw for number, raw in enumerate(lines, start=1) if number not in bad]
    atomic_write_bytes(path, b"".join(raw + b"\n" for raw in kept) + tail)
    return len(bad)


class CallLedger:
    """This process's writer of the ledger. ``started`` raises when its line cannot be
    written (a full disk): then the call must not be sent. End lines wait for the next
    write (and one that cannot be written is kept for the next that can): its call stays
    open meanwhile, counted at its estimate."""

    def __init__(self, path: Path, process: str) -> None:
        self.path = path
        self._prefix = process + "-"
        self._next = 0
        self._fd: int | None = None
        self._held: list[bytes] = []
        self._heads: dict[tuple[str, str], str] = {}

    def _open(self) -> int:
        if self._fd is None:
            cut_partial_last_line(self.path)
            self._fd = open_no_follow(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        return self._fd

    def _write(self, data: bytes) -> None:
        """Write ``data`` after the lines held back; on failure cut what part of a line got
        out (a start cut short was never sent; a held end is written again later)."""
        fd = self._fd if self._fd is not None else self._open()
        payload = b"".join((*self._held, data)) if self._held else data
        try:
            written = os.write(fd, payload)
            if written < len(payload):  # a short write: rare (a disk filling up)
                _write_all(fd, payload[written:], self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                cut_partial_last_line(self.path)
            raise OSError(exc.errno, exc.strerror, str(self.path)) from None
        self._held = []

    def started(self, model: str, phase: str, item: str, estimate_usd: float) -> str:
        self._next += 1
        call = f"{self._prefix}{self._next}"
        head = self._heads.get((model, phase))
        if head is None:
            head = self._heads[(model, phase)] = f'", "model": {json.dumps(model)}, "phase": {json.dumps(phase)}, "item": '
        self._write(f'{{"start": "{call}{head}{json.dumps(item)}, "estimate_usd": {float(estimate_usd)!r}}}\n'.encode())
        return call

    def ended(self, call: str, cost_usd: float | None) -> None:
        """Its end line goes out with the next start line (one write for both; a call's end
        need not be on disk before the next is sent) or at :meth:`close`: a kill before
        then leaves it open, counted at its estimate."""
        cost = "null" if cost_usd is None else repr(round(float(cost_usd), 10))
        self._held.append(f'{{"end": "{call}", "cost_usd": {cost}}}\n'.encode())

    def not_sent(self, call: str) -> None:
        self._end(f'{{"end": "{call}", "sent": false}}\n')

    def _end(self, line: str) -> None:
        data = line.encode("utf-8")
        try:
            self._write(data)
        except OSError:
            self._held.append(data)

    def close(self) -> None:
        """Write what is held, if the disk lets it now, and close."""
        if self._held:
            with contextlib.suppress(OSError):
                self._write(b"")
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def ledger_path(run_root: Path) -> Path:
    """Where a run folder keeps its ledger."""
    return Path(run_root) / LEDGER_NAME
