"""Teachers' rejected replies (the item-quality gate's counts in meta.json) for the summary."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["with_rejections"]


def with_rejections(teachers: Mapping[str, Mapping[str, Any]], meta: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Copies of the teachers' entries with ``rejected: {rule: count}`` ({} when none, and
    for legacy runs); the tables keep their flat columns."""
    block = meta.get("item_quality")
    raw = block.get("rejected") if isinstance(block, Mapping) else None
    counts = raw if isinstance(raw, Mapping) else {}
    out: dict[str, dict[str, Any]] = {}
    for name, entry in teachers.items():
        rules = counts.get(name)
        out[name] = {**entry, "rejected": ({str(r): int(n) for r, n in rules.items() if isinstance(n, int)}
                                           if isinstance(rules, Mapping) else {})}
    return out
