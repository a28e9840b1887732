"""Text normalisation shared by the item checks: words, shingles, Jaccard, word runs.

Words are runs of Unicode letters and digits, case-folded (``_`` separates words), so
accented, CJK and Cyrillic text and identifiers in code all count as words; punctuation
and whitespace never do.
"""

from __future__ import annotations

import re

__all__ = ["has_word_run", "jaccard", "normalise", "shingles", "words"]

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def words(text: str) -> list[str]:
    """Case-folded words of ``text`` (Unicode-aware)."""
    return _WORD.findall(str(text).casefold())


def normalise(text: str) -> str:
    """``text`` as its words joined by single spaces: case, punctuation and spacing removed."""
    return " ".join(words(text))


def shingles(text: str, size: int = 3) -> frozenset[str]:
    """Overlapping ``size``-word shingles; a text shorter than ``size`` words is one shingle."""
    ws = words(text)
    if len(ws) <= size:
        return frozenset({" ".join(ws)}) if ws else frozenset()
    return frozenset(" ".join(ws[i : i + size]) for i in range(len(ws) - size + 1))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity of two shingle sets (0.0 when either is empty)."""
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def has_word_run(text: str, source: str, run: int) -> bool:
    """Whether ``text`` contains ``run`` consecutive words of ``source`` (same order), or
    equals ``source`` when ``source`` is shorter than ``run`` words but not empty."""
    src = words(source)
    txt = " " + normalise(text) + " "
    if not src:
        return False
    if len(src) < run:
        return txt.strip() == " ".join(src)
    grams = {" ".join(src[i : i + run]) for i in range(len(src) - run + 1)}
    tw = txt.split()
    return any(" ".join(tw[i : i + run]) in grams for i in range(len(tw) - run + 1))
