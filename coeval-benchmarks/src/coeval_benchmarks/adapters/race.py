"""RACE (ehovy/race): reading comprehension from English exams for Chinese students.

Hub rows: ``example_id`` (the passage's file, e.g. ``high1234.txt``, shared by its
questions), ``article``, ``question``, ``options`` (4), ``answer`` (letter).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coeval_benchmarks.adapters._common import (
    LETTERS,
    MultipleChoiceAdapter,
    choice_item,
    row_id,
    text,
    text_list,
)
from coeval_benchmarks.base import BenchmarkItem, RowError


class RACE(MultipleChoiceAdapter):
    name = "race"
    title = "RACE"
    hub_id = "ehovy/race"
    hub_config = "all"
    default_split = "test"
    description = "Read a passage from an English exam and answer a multiple-choice question about it."
    output_description = "The letter of the correct option: A, B, C or D."
    required_fields = ("article", "question", "options", "answer")

    def item(self, row: Mapping[str, Any], index: int, split: str) -> BenchmarkItem:
        options = text_list(row, "options", min_len=2)
        answer = str(row.get("answer") or "").strip().upper()
        if len(answer) != 1 or answer not in LETTERS[: len(options)]:
            raise RowError(f"field 'answer' must be a letter A-{LETTERS[len(options) - 1]}, got {row.get('answer')!r}")
        example = str(row.get("example_id") or "")
        level = "high" if example.startswith("high") else "middle" if example.startswith("middle") else "unknown"
        question = text(row, "question").strip()
        return choice_item(
            native_id=row_id(split, index),
            intro="Read the passage, then answer the question about it.",
            context=f"Passage:\n{text(row, 'article').strip()}",
            question=question,
            options=options,
            answer_index=LETTERS.index(answer),
            attributes={"school_level": level},
        )
