"""``length_ratio``: how close an answer's length is to the reference answer's.

A rubric factor ``{metric: length_ratio}`` is scored with it, without a judge call:
``min(a, r) / max(a, r)`` over the two texts' lengths in characters, so 1.0 means the
same length and 0.5 an answer half (or twice) as long. Two empty texts score 1.0.
"""

from __future__ import annotations

__all__ = ["LengthRatio"]


class LengthRatio:
    """A :class:`coeval.Metric`: one score in [0, 1] per (candidate, reference)."""

    def score(self, candidates: list[str], references: list[str]) -> list[float]:
        out = []
        for candidate, reference in zip(candidates, references, strict=True):
            a, r = len(candidate.strip()), len(reference.strip())
            out.append(1.0 if max(a, r) == 0 else min(a, r) / max(a, r))
        return out
