"""Report section: ground truth in the loop. How many human labels the run has (and how
many more would settle its undetermined comparisons), each judge's agreement with the
people and with gold, and the students ranked by human labels alone."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup, escape

from coeval_analysis.reports.blocks import Section, Table, Text

__all__ = ["reference_section"]


def _judge_rows(judges: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for name, entry in judges.items():
        row: dict[str, Any] = {"judge": name}
        for source in ("human", "gold"):
            for key, value in (entry.get(source) or {}).items():
                row[f"{source}_{key}"] = value
        rows.append(row)
    return rows


def reference_section(p: Any) -> Section | None:
    """The section, or None when the run has neither human labels nor gold."""
    ref = p.summary.get("reference")
    if not ref:
        return None
    blocks: list[Any] = [Text(Markup(f'<p id="labels-line">{escape(ref["line"])}</p>'))]
    rows = _judge_rows(ref.get("judges") or {})
    if rows:
        cols = [("judge", "judge")]
        for source, label in (("human", "humans"), ("gold", "gold")):
            if any(f"{source}_n" in r for r in rows):
                cols += [(f"{source}_kappa_linear", f"κ (linear) with {label}"), (f"{source}_pearson", "r"),
                         (f"{source}_bias", "bias"), (f"{source}_n", "shared units")]  # fmt: skip
        blocks.append(Table(cols, rows, caption="Each judge against the reference"))
    ranking = ref.get("human_ranking")
    if ranking:
        blocks.append(
            Table(
                [
                    ("student", "student"),
                    ("rank_label", "rank"),
                    ("score", "human score"),
                    ("ci", f"{p.pct} CI"),
                    ("n_answers", "labelled answers"),
                ],
                [{"student": s, **v} for s, v in ranking["students"].items()],
                caption="Students by human labels alone",
            )
        )
    return Section(
        "ground-truth",
        "Human labels and gold",
        "Human labels (human_labels.jsonl: coeval view --label, coeval label --import) and gold are the "
        "reference judge: known scale, no family. κ is linear-weighted on the three levels (scores rounded to "
        "the nearest level), r is Pearson's correlation, bias the judge's mean minus the reference's, on the "
        "units both scored (gold: per answer, the judge's mean over its factors). The human-only ranking needs "
        "at least 5 labelled answers per student; its intervals resample the labelled datapoints.",
        blocks,
    )
