"""SciQ (allenai/sciq): crowd-sourced science exam questions with a supporting paragraph.

Hub rows: ``question``, ``correct_answer``, ``distractor1``-``distractor3``, ``support`` (may be
empty). The release keeps the answer apart from the distractors, so the four options are put
in a fixed order derived from the question before lettering.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coeval_benchmarks.adapters._common import (
    MultipleChoiceAdapter,
    choice_item,
    row_id,
    stable_shuffle,
    text,
)
from coeval_benchmarks.base import BenchmarkItem


class SciQ(MultipleChoiceAdapter):
    name = "sciq"
    title = "SciQ"
    hub_id = "allenai/sciq"
    default_split = "test"
    description = "Answer a multiple-choice science exam question, using the supporting paragraph when one is given."
    output_description = "The letter of the correct option: A, B, C or D."
    required_fields = ("question", "correct_answer", "distractor1", "distractor2", "distractor3")

    def item(self, row: Mapping[str, Any], index: int, split: str) -> BenchmarkItem:
        question = text(row, "question")
        options = [text(row, f) for f in ("correct_answer", "distractor1", "distractor2", "distractor3")]
        options, correct = stable_shuffle(options, 0, question)
        support = str(row.get("support") or "").strip()
        return choice_item(
            native_id=row_id(split, index),
            intro="The following is a multiple-choice science question.",
            context=f"Background:\n{support}" if support else None,
            question=question,
            options=options,
            answer_index=correct,
            attributes={"context": "with_passage" if support else "no_passage"},
        )
