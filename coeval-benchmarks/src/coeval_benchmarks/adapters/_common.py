"""Helpers the adapters share: typed field access, and the multiple-choice item and adapter base."""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from coeval_benchmarks.base import BenchmarkAdapter, BenchmarkItem, RowError

__all__ = [
    "LETTERS",
    "MCQ_RUBRIC",
    "MultipleChoiceAdapter",
    "bucket",
    "choice_item",
    "letter_for",
    "row_id",
    "text",
    "text_list",
]

LETTERS = string.ascii_uppercase

MCQ_RUBRIC: Mapping[str, str] = {
    "correctness": "The option the response selects is the option given in the reference answer.",
    "clarity": (
        "The response commits to exactly one option and states it unambiguously, "
        "without hedging between options."
    ),
}


def text(row: Mapping[str, Any], field: str, *, allow_empty: bool = False) -> str:
    value = row.get(field)
    if not isinstance(value, str):
        raise RowError(f"field {field!r} must be a string, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise RowError(f"field {field!r} must not be empty")
    return value


def text_list(row: Mapping[str, Any], field: str, *, min_len: int = 1) -> list[str]:
    value = row.get(field)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise RowError(f"field {field!r} must be a list of strings")
    if len(value) < min_len:
        raise RowError(f"field {field!r} must hold at least {min_len} item(s), got {len(value)}")
    return list(value)


def row_id(split: str, index: int) -> str:
    """Native id for datasets without one: the row's place in the published split file."""
    return f"{split}-{index:05d}"


def letter_for(index: int, n_options: int, field: str) -> str:
    if not 0 <= index < n_options:
        raise RowError(f"field {field!r} must point at one of {n_options} options, got {index}")
    return LETTERS[index]


def bucket(value: int, edges: Sequence[tuple[int, str]], last: str) -> str:
    """The label of the first ``(upper_bound, label)`` with ``value <= upper_bound``."""
    for upper, label in edges:
        if value <= upper:
            return label
    return last


def _clean(option: str) -> str:
    return re.sub(r"\s+", " ", option).strip()


def choice_item(
    *,
    native_id: str,
    intro: str,
    question: str,
    options: Sequence[str],
    answer_index: int,
    attributes: Mapping[str, str],
    context: str | None = None,
) -> BenchmarkItem:
    """A multiple-choice item: lettered options, gold letter, ``correct_answer`` attribute."""
    if len(options) < 2:
        raise RowError(f"a multiple-choice item needs at least 2 options, got {len(options)}")
    letters = LETTERS[: len(options)]
    choices = {letter: _clean(opt) for letter, opt in zip(letters, options, strict=True)}
    gold = letter_for(answer_index, len(options), "answer")
    listed = "\n".join(f"{letter}. {opt}" for letter, opt in choices.items())
    allowed = ", ".join(letters[:-1]) + f" or {letters[-1]}"
    parts = [intro]
    if context:
        parts.append(context.strip())
    parts.append(f"Question: {question.strip()}")
    parts.append(listed)
    parts.append(f"Reply with the letter of the correct option ({allowed}).")
    return BenchmarkItem(
        native_id=native_id,
        prompt="\n\n".join(parts),
        reference=f"{gold}. {choices[gold]}",
        attributes={**attributes, "correct_answer": gold},
        gold_metric="choice",
        label=gold,
        choices=choices,
    )


class MultipleChoiceAdapter(BenchmarkAdapter):
    """A dataset whose items are all :func:`choice_item` questions: scored on the option letter,
    with the gold letter as the ``correct_answer`` label attribute."""

    gold_metric = "choice"
    rubric: ClassVar[Mapping[str, str]] = MCQ_RUBRIC
    label_attributes = ("correct_answer",)


def stable_shuffle(options: Sequence[str], correct: int, key: str) -> tuple[list[str], int]:
    """Options in an order fixed by ``key`` (so a re-ingest gives the same letters), and the
    new index of the correct one. For datasets that always list the correct answer first."""
    order = sorted(range(len(options)), key=lambda i: hashlib.sha256(f"{key}\x00{i}".encode()).hexdigest())
    return [options[i] for i in order], order.index(correct)
