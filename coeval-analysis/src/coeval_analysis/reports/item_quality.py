"""Report section: teacher replies the item-quality gate rejected, and teachers whose kept
items barely separate the students (a sign of degenerate items)."""

from __future__ import annotations

from typing import Any

from coeval_analysis.items.teacher_diversity import LOW_DIVERSITY
from coeval_analysis.reports.blocks import Section, Table

__all__ = ["FLAT_DISCRIMINATION", "item_quality_section"]

#: Below this mean per-item spread of student scores, students score alike on the teacher's items.
FLAT_DISCRIMINATION = 0.05


def _row(name: str, entry: dict[str, Any]) -> dict[str, Any]:
    rejected = entry.get("rejected") or {}
    disc = entry.get("discrimination")
    flat = isinstance(disc, int | float) and disc < FLAT_DISCRIMINATION
    flags = (["students score alike on its items"] if flat else []) + (
        [f"its prompts are alike (similarity {entry['prompt_similarity']:.2f})"] if entry.get("low_diversity") else []
    )
    return {
        "teacher": name,
        "rejected": sum(rejected.values()),
        "rules": ", ".join(f"{r}: {n}" for r, n in sorted(rejected.items())) or "—",
        "flag": "; ".join(flags) or "—",
    }


def item_quality_section(p: Any) -> Any:
    """The section, or None when no teacher had a rejection or a flag."""
    teachers = p.summary.get("teachers") or {}
    rows = [_row(name, entry) for name, entry in teachers.items()]
    if not any(r["rejected"] or r["flag"] != "—" for r in rows):
        return None
    table = Table([("teacher", "teacher"), ("rejected", "rejected replies"), ("rules", "by rule"),
                        ("flag", "flag")], rows)
    return Section(
        "item-quality",
        "Item quality",
        "Teacher replies rejected by the item checks (each was asked again; see docs/item-quality.md), "
        f"and teachers whose items have a mean student-score spread below {FLAT_DISCRIMINATION} "
        f"or whose prompts are alike (mean pairwise similarity above {LOW_DIVERSITY}).",
        [table],
    )
