"""How long a task's ``output_description`` asks answers to be.

Two readings: the least an answer may have (:func:`implied_min_words`), shared by the
item-quality gate (a reference far shorter than asked is rejected) and the ``mock``
interface (its answers are as long as asked), so the mock's items pass the gate; and the
length a typical answer has (:func:`typical_words`), for the plan's token estimate. They
live with the prompts so none of their users imports another.
"""

from __future__ import annotations

import re

__all__ = ["implied_min_words", "typical_words"]

_AT_LEAST = re.compile(r"(?:at least|minimum of|no fewer than)\s+(\d+)\s+words")
_RANGE = re.compile(r"(\d+)\s*(?:-|–|to)\s*\d+\s+(words|sentences|paragraphs)")
_COUNT = re.compile(r"(\d+)\s+(words|sentences|paragraphs)")
_UNIT_WORDS = {"words": 1, "sentences": 10, "paragraphs": 40}
_KEYWORDS = (("essay", 150), ("paragraphs", 80), ("paragraph", 40), ("summary", 10), ("explanation", 10))


def implied_min_words(output_description: str) -> int:
    """Words an answer must have at least, read from the task's ``output_description``:
    "at least N words", "N-M words/sentences/paragraphs", "N sentences", else a keyword
    (essay 150, paragraphs 80, paragraph 40, summary/explanation 10), else 1."""
    text = output_description.casefold()
    m = _AT_LEAST.search(text)
    if m:
        return int(m.group(1))
    for pattern in (_RANGE, _COUNT):
        m = pattern.search(text)
        if m:
            return int(m.group(1)) * _UNIT_WORDS[m.group(2)]
    for keyword, n in _KEYWORDS:
        if keyword in text:
            return n
    return 1


#: Words of a typical sentence and paragraph of an answer (English prose).
_TYPICAL_UNIT_WORDS = {"word": 1, "sentence": 18, "paragraph": 90}
_NUMBER_WORDS = {"a": 1, "an": 1, "a single": 1, "one": 1, "two": 2, "a couple of": 2, "three": 3, "a few": 3,
                 "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
_NUMBER = r"(\d+|" + "|".join(sorted((re.escape(w) for w in _NUMBER_WORDS), key=len, reverse=True)) + r")"
_UNIT = r"(word|sentence|paragraph)s?\b"
#: up to two describing words between the number and the unit ("one correct, complete sentence")
_DESCRIBED = r"(?:(?!(?:in|of|with|for|and|or|per)\b)[a-z-]+,?\s+){0,2}"
_TYPICAL_RANGE = re.compile(rf"\b{_NUMBER}\s*(?:-|–|to|or)\s*{_NUMBER}\s+{_DESCRIBED}{_UNIT}")
_TYPICAL_COUNT = re.compile(rf"\b{_NUMBER}\s+{_DESCRIBED}{_UNIT}")
_TYPICAL_BOUND = re.compile(r"\b(at least|minimum of|no fewer than|at most|up to|no more than|under|fewer than)"
                            r"\s+(\d+)\s+words")
_TYPICAL_KEYWORDS = (("essay", 400), ("paragraphs", 270), ("paragraph", 90))


def _number(text: str) -> float:
    return float(text) if text.isdigit() else float(_NUMBER_WORDS[text])


def typical_words(output_description: str) -> float | None:
    """Words a typical answer has, read from the task's ``output_description``: the middle
    of "N-M" or "one or two" words/sentences/paragraphs, "N sentences", a bound on words
    ("at least 80 words": a little over; "at most 80 words": a little under), else a
    keyword (essay, paragraphs, paragraph); None when it names no length."""
    text = output_description.casefold()
    m = _TYPICAL_BOUND.search(text)
    if m:
        return int(m.group(2)) * (1.25 if m.group(1) in ("at least", "minimum of", "no fewer than") else 0.75)
    m = _TYPICAL_RANGE.search(text)
    if m:
        return (_number(m.group(1)) + _number(m.group(2))) / 2 * _TYPICAL_UNIT_WORDS[m.group(3)]
    m = _TYPICAL_COUNT.search(text)
    if m:
        return _number(m.group(1)) * _TYPICAL_UNIT_WORDS[m.group(2)]
    for keyword, words in _TYPICAL_KEYWORDS:
        if keyword in text:
            return float(words)
    return None
