"""ARC-Challenge (allenai/ai2_arc, config ``ARC-Challenge``): grade-school science questions
that retrieval and co-occurrence methods get wrong.

Hub rows: ``id``, ``question``, ``choices`` ``{"text": [...], "label": [...]}``, ``answerKey``.
Labels are letters for most items and digits ("1"-"4") for some; options are re-lettered A, B,
... in their published order, so every item speaks letters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coeval_benchmarks.adapters._common import MultipleChoiceAdapter, choice_item, text, text_list
from coeval_benchmarks.base import BenchmarkItem, RowError


class ARCChallenge(MultipleChoiceAdapter):
    name = "arc_challenge"
    title = "ARC-Challenge"
    hub_id = "allenai/ai2_arc"
    hub_config = "ARC-Challenge"
    default_split = "test"
    description = "Answer a multiple-choice grade-school science question that needs reasoning, not just lookup."
    output_description = "The letter of the correct option."
    required_fields = ("id", "question", "choices", "answerKey")

    def item(self, row: Mapping[str, Any], index: int, split: str) -> BenchmarkItem:
        choices = row.get("choices")
        if not isinstance(choices, Mapping):
            raise RowError("field 'choices' must be an object with 'text' and 'label' lists")
        texts = text_list(choices, "text", min_len=2)
        labels = [label.strip() for label in text_list(choices, "label", min_len=2)]
        if len(labels) != len(texts):
            raise RowError("field 'choices' must have as many labels as texts")
        key = str(row.get("answerKey") or "").strip()
        if key not in labels:
            raise RowError(f"field 'answerKey' must be one of the choice labels {labels}, got {key!r}")
        native = text(row, "id")
        return choice_item(
            native_id=native,
            intro="The following is a multiple-choice science question.",
            question=text(row, "question"),
            options=texts,
            answer_index=labels.index(key),
            attributes={"source": native.split("_", 1)[0]},
        )
