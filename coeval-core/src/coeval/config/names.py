"""Which configured name a misspelt one meant, for fix lines that name a model.

Model names of one config often share a maker's prefix (``smollm2-greedy``,
``smollm2-warm``) or differ by a size suffix (``gpt-4o``, ``gpt-4o-mini``), so a loose
similarity offers a different model. Only a likely typo counts: a few edits (letters
added, dropped, changed or swapped) for the word's length.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["close_name", "edit_distance"]


def edit_distance(a: str, b: str) -> int:
    """Optimal string alignment distance: insertions, deletions, substitutions and swaps
    of two neighbouring letters each count 1."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[len(b)]


def close_name(word: str, choices: Iterable[str]) -> str | None:
    """The one choice ``word`` is a likely typo of (case aside), or None: at most 1 edit
    for names under 8 characters, 2 from there; a tie between two choices is None."""
    lowered = {c.lower(): c for c in choices}
    key = word.lower()
    if key in lowered:
        return lowered[key]
    limit = 1 if len(key) < 8 else 2
    scored = sorted((edit_distance(key, c), c) for c in lowered)
    near = [(d, c) for d, c in scored if d <= limit]
    if not near or (len(near) > 1 and near[0][0] == near[1][0]):
        return None
    return lowered[near[0][1]]
