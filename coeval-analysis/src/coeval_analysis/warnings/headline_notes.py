"""Sentences that explain the headline where it differs from the plain mean; shown by the
report and the console, kept in summary.json as ``headline_notes``."""

from __future__ import annotations

from typing import Any

from coeval_analysis.ranking.headline import RELIABILITY_FLOOR

__all__ = ["headline_notes"]


def _reasons(student: str, summary: dict[str, Any]) -> list[str]:
    families = summary.get("headline", {}).get("families", {})
    judges = summary.get("judges") or {}
    fam = families.get(student, student)
    out = []
    related = [j for j, v in judges.items() if families.get(j, j) == fam and (v.get("n_conflicted") or 0) > 0]
    if related:
        shares = [judges[j].get("family_bias_prior_share") for j in related]
        known = [s for s in shares if s is not None]
        if known and max(known) > 0.5:
            out.append(
                f"its family's judges ({', '.join(related)}) grade it and no competent unrelated judge can measure "
                "their bias toward it, so the headline keeps their scores with that bias bounded by a prior; the "
                "mean takes them at face value"
            )
        else:
            bias = ", ".join(f"{j} {judges[j].get('family_bias') or 0:+.2f}" for j in related)
            out.append(f"the headline removes the bias its family's judges show toward it ({bias}); the mean does not")
    flat = [j for j, v in judges.items() if (v.get("reliability") is not None and v["reliability"] < RELIABILITY_FLOOR)]
    if flat:
        out.append(
            f"the mean counts judges that barely tell answers apart ({', '.join(flat)}) as much as the others; "
            "the headline counts each judge by how well it does"
        )
    return out


def headline_notes(summary: dict[str, Any]) -> list[str]:
    """One sentence per student whose headline and mean ranks differ."""
    notes = []
    for name, s in summary["students"].items():
        if s.get("headline_rank") is None or s.get("rank") is None or s["headline_rank"] == s["rank"]:
            continue
        reasons = _reasons(name, summary) or [
            "the headline weights judges by how well they tell answers apart, and each kind of evidence by the "
            "rubric's weights; the mean weights every score equally"
        ]
        notes.append(
            f"{name}: headline rank {s.get('rank_label')}, mean rank {s['rank']}: {'; and '.join(reasons)}."
        )
    return notes
