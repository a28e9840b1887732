"""HellaSwag (Rowan/hellaswag): pick the most plausible continuation of a scene.

Hub rows: ``ind``, ``activity_label``, ``ctx_a``, ``ctx_b``, ``ctx``, ``endings`` (4),
``source_id`` (``activitynet~...`` or ``wikihow~...``), ``split``, ``split_type``
(``indomain`` / ``zeroshot``), ``label`` ("0"-"3" on the hub, an int in the original JSONL;
empty on the test split, whose labels are not public).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from coeval_benchmarks.adapters._common import MultipleChoiceAdapter, choice_item, row_id, text, text_list
from coeval_benchmarks.base import BenchmarkItem, RowError

_TAG = re.compile(r"\s*\[[a-z ]+\]\s*")


def tidy(fragment: str) -> str:
    """Drop the ``[header]`` / ``[step]`` markers WikiHow rows carry."""
    return re.sub(r"\s+", " ", _TAG.sub(" ", fragment)).strip()


def _label(row: Mapping[str, Any]) -> int:
    value = row.get("label")
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise RowError(
        f"field 'label' must be the index of the right ending (0-3), got {value!r} "
        "(the test split has no public labels: ingest --split validation)"
    )


class HellaSwag(MultipleChoiceAdapter):
    name = "hellaswag"
    title = "HellaSwag"
    hub_id = "Rowan/hellaswag"
    default_split = "validation"
    description = "Pick the most plausible continuation of a short description of an everyday activity."
    output_description = "The letter of the most plausible ending: A, B, C or D."
    required_fields = ("ctx", "endings", "label")

    def item(self, row: Mapping[str, Any], index: int, split: str) -> BenchmarkItem:
        endings = [tidy(e) for e in text_list(row, "endings", min_len=2)]
        activity = tidy(str(row.get("activity_label") or "")).strip()
        source = str(row.get("source_id") or "").split("~", 1)[0] or "unknown"
        attributes = {"source": source}
        if row.get("split_type"):
            attributes["split_type"] = str(row["split_type"])
        native = row.get("ind")
        intro = "Which ending continues the following description most plausibly?"
        if activity:
            intro = f"{intro} (Activity: {activity}.)"
        return choice_item(
            native_id=str(native) if isinstance(native, (int, str)) and str(native) else row_id(split, index),
            intro=intro,
            question=tidy(text(row, "ctx")) + " ...",
            options=endings,
            answer_index=_label(row),
            attributes=attributes,
        )
