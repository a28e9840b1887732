"""Rejection counts in ``meta.json``: ``item_quality.rejected[teacher][rule]``.

Every rejection is counted when it happens, including those a retry then fixed, so the
counts say how often a teacher produced junk, not only how many items finally failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coeval.storage.run_folder import RunFolder

__all__ = ["add_rejection", "rejections"]

META_KEY = "item_quality"


def add_rejection(run: RunFolder, teacher: str, rule: str) -> None:
    """Count one rejection of ``teacher``'s reply by ``rule`` (under the meta.json lock)."""

    def change(meta: dict[str, Any]) -> None:
        block = meta.setdefault(META_KEY, {})
        per_teacher = block.setdefault("rejected", {}).setdefault(teacher, {})
        per_teacher[rule] = int(per_teacher.get(rule, 0)) + 1

    run.update_meta(change)


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
