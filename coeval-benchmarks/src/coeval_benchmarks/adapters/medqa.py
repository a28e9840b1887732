"""MedQA, US subset (bigbio/med_qa ``med_qa_en_source``; the original ``US/*.jsonl``).

Rows: ``question``, ``options`` (``{"A": text, ...}`` in the original JSONL, a list of
``{"key", "value"}`` in the hub's source schema), ``answer_idx`` (the letter), ``answer``
(the text), ``meta_info`` (``step1`` / ``step2&3``). Four- and five-option releases both load.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from coeval_benchmarks.adapters._common import LETTERS, MultipleChoiceAdapter, choice_item, row_id, text
from coeval_benchmarks.base import BenchmarkItem, RowError


def options_by_letter(row: Mapping[str, Any]) -> dict[str, str]:
    raw = row.get("options")
    pairs: list[tuple[Any, Any]]
    if isinstance(raw, Mapping):
        pairs = list(raw.items())
    elif isinstance(raw, list) and all(isinstance(o, Mapping) and "key" in o and "value" in o for o in raw):
        pairs = [(o["key"], o["value"]) for o in raw]
    else:
        raise RowError("field 'options' must map letters to texts, or list {'key', 'value'} objects")
    options = {str(k).strip().upper(): v for k, v in pairs if v is not None}
    letters = sorted(options)
    if len(letters) < 2 or letters != list(LETTERS[: len(letters)]):
        raise RowError(f"field 'options' must be keyed A, B, C, ... without gaps, got {letters}")
    if not all(isinstance(v, str) and v.strip() for v in options.values()):
        raise RowError("field 'options' must hold non-empty texts")
    return {k: options[k] for k in letters}


class MedQA(MultipleChoiceAdapter):
    name = "medqa"
    title = "MedQA (USMLE)"
    hub_id = "bigbio/med_qa"
    default_split = "test"
    description = "Answer a US medical licensing exam (USMLE) style clinical multiple-choice question."
    output_description = "The letter of the correct option."
    rubric: ClassVar[Mapping[str, str]] = {
        "correctness": "The option the response selects is the option given in the reference answer.",
        "clinical_reasoning": (
            "Any explanation is medically accurate and points to the findings in the vignette that "
            "decide the answer; a bare letter is acceptable."
        ),
    }
    required_fields = ("question", "options")

    def item(self, row: Mapping[str, Any], index: int, split: str) -> BenchmarkItem:
        options = options_by_letter(row)
        letters = list(options)
        gold = row.get("answer_idx")
        if isinstance(gold, str) and gold.strip().upper() in options:
            answer = letters.index(gold.strip().upper())
        elif isinstance(row.get("answer"), str) and row["answer"].strip() in options.values():
            answer = list(options.values()).index(row["answer"].strip())
        else:
            raise RowError(f"field 'answer_idx' must be one of {', '.join(letters)}, got {gold!r}")
        step = str(row.get("meta_info") or "unknown").strip() or "unknown"
        return choice_item(
            native_id=row_id(split, index),
            intro="The following is a medical licensing exam question.",
            question=text(row, "question"),
            options=list(options.values()),
            answer_index=answer,
            attributes={"exam_step": step},
        )
