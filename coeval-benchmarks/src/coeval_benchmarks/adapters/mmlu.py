"""MMLU (cais/mmlu): four-option questions over 57 subjects.

Hub rows: ``question``, ``subject``, ``choices`` (4 strings), ``answer`` (0-3; some mirrors
write the letter).
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


def answer_index(row: Mapping[str, Any], field: str, n_options: int) -> int:
    """An answer given as an index (0-based) or as an option letter."""
    value = row.get(field)
    if isinstance(value, bool):
        raise RowError(f"field {field!r} must be an option index or letter, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and len(value.strip()) == 1 and value.strip().upper() in LETTERS[:n_options]:
        return LETTERS.index(value.strip().upper())
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    raise RowError(
        f"field {field!r} must be an option index 0-{n_options - 1} or a letter "
        f"A-{LETTERS[n_options - 1]}, got {value!r}"
    )


class MMLU(MultipleChoiceAdapter):
    name = "mmlu"
    title = "MMLU"
    hub_id = "cais/mmlu"
    hub_config = "all"
    default_split = "test"
    description = "Answer a multiple-choice knowledge question from one of 57 academic and professional subjects."
    output_description = "The letter of the correct option: A, B, C or D."
    required_fields = ("question", "choices", "answer")

    def item(self, row: Mapping[str, Any], index: int, split: str) -> BenchmarkItem:
        options = text_list(row, "choices", min_len=2)
        subject = str(row.get("subject") or "general").strip() or "general"
        readable = subject.replace("_", " ")
        return choice_item(
            native_id=row_id(split, index),
            intro=f"The following is a multiple-choice question about {readable}.",
            question=text(row, "question"),
            options=options,
            answer_index=answer_index(row, "answer", len(options)),
            attributes={"subject": subject},
        )
