"""Rejection counts in ``meta.json``: ``item_quality.rejected[teacher][rule]``.

Every rejection is counted when it happens, including those a retry then fixed, so the
counts say how often a teacher produced junk, not only how many items finally failed.

A phase holds its counts in a :class:`RejectionLedger` and adds them to ``meta.json`` at
most once every :data:`WRITE_EVERY_S` and when it ends: each write reads, rewrites and
syncs the file under its lock (about 1 ms on a local disk, far more on a network one), on
the event loop every call waits on, and a teacher that writes junk is rejected many times
a second. A kill loses at most the last second's counts; no record depends on them.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from coeval.storage.run_folder import RunFolder

__all__ = ["WRITE_EVERY_S", "RejectionLedger", "rejections"]

META_KEY = "item_quality"
#: seconds between two writes of the counts to ``meta.json`` while rejections come in
WRITE_EVERY_S = 1.0


def _add(run: RunFolder, counts: Mapping[tuple[str, str], int]) -> None:
    """Add rejection counts per (teacher, rule) to ``meta.json``, under its lock."""

    def change(meta: dict[str, Any]) -> None:
        rejected = meta.setdefault(META_KEY, {}).setdefault("rejected", {})
        for (teacher, rule), n in counts.items():
            per_teacher = rejected.setdefault(teacher, {})
            per_teacher[rule] = int(per_teacher.get(rule, 0)) + n

    run.update_meta(change)


class RejectionLedger:
    """A phase's rejection counts, written to ``meta.json`` at most every ``every_s``
    seconds while they come in, and by :meth:`flush` (the phase's end)."""

    def __init__(self, run: RunFolder, every_s: float = WRITE_EVERY_S,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.run = run
        self.every_s = every_s
        self._clock = clock
        self._held: Counter[tuple[str, str]] = Counter()
        self._written_at = clock()

    def add(self, teacher: str, rule: str) -> None:
        self._held[(teacher, rule)] += 1
        if self._clock() - self._written_at >= self.every_s:
            self.flush()

    def flush(self) -> None:
        """Add the counts held to ``meta.json`` (nothing to write: no write)."""
        self._written_at = self._clock()
        if self._held:
            held, self._held = self._held, Counter()
            _add(self.run, held)


def rejections(meta: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """``{teacher: {rule: count}}`` from a loaded meta.json (empty for legacy runs)."""
    block = meta.get(META_KEY)
    raw = block.get("rejected") if isinstance(block, Mapping) else None
    if not isinstance(raw, Mapping):
        return {}
    out: dict[str, dict[str, int]] = {}
    for teacher, rules in raw.items():
        if isinstance(rules, Mapping):
            out[str(teacher)] = {str(r): int(n) for r, n in rules.items() if isinstance(n, int)}
    return out
