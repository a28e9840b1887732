"""How long a task's ``output_description`` asks answers to be.

One reading shared by the item-quality gate (a reference far shorter than asked is
rejected) and the ``mock`` interface (its answers are as long as asked), so the mock's
items pass the gate; it lives with the prompts so neither imports the other.
"""

from __future__ import annotations

import re

__all__ = ["implied_min_words"]

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
