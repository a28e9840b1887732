"""The one rule for "this answer is that label", shared by phase 5 and the analysis.

Phase 5's ``label`` evaluator scores an answer 1.0 when it equals the gold label after
normalising both, and the analysis computes per-label precision/recall with the same
normalisation, so a report cannot say "match" where the evaluation scored 0.
"""

from __future__ import annotations

import re
import string

__all__ = ["normalise_label"]

#: Stripped from both ends: whitespace, ASCII punctuation (quotes, ``*``/``_`` emphasis,
#: ``%``, ``#``, ``~``, final full stops), typographic quotes and guillemets.
_EDGES = string.whitespace + string.punctuation + "\u201c\u201d\u2018\u2019\u00ab\u00bb\u201e\u201a\u2039\u203a"
_SEPARATORS = re.compile(r"[\s_\-]+")


def normalise_label(text: str) -> str:
    """Case-folded, surrounding punctuation, quotes and emphasis removed, runs of spaces,
    ``_`` and ``-`` turned into one space (``"**Very_positive.**"`` -> ``"very positive"``)."""
    return _SEPARATORS.sub(" ", str(text).strip().strip(_EDGES)).casefold().strip()
