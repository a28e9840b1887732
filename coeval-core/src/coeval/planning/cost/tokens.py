"""Token counts without a tokenizer download.

No tokenizer ships with the core and nothing may be downloaded at run time, so prompts are
measured at about four characters a token (English prose with common BPE vocabularies).
Sample calls calibrate this per model: the ratio of the tokens a provider reports to this
estimate for the same prompt scales every later estimate for that model.
"""

from __future__ import annotations

__all__ = ["CHARS_PER_TOKEN", "TOKENS_PER_WORD", "estimate_tokens", "filler_text"]

CHARS_PER_TOKEN = 4.0
#: Tokens per English word with common BPE vocabularies (about 0.75 words a token).
TOKENS_PER_WORD = 1.33

_FILLER = [
    "the",
    "report",
    "compares",
    "quarterly",
    "results",
    "across",
    "three",
    "regions",
    "and",
    "notes",
    "where",
    "demand",
    "grew",
    "faster",
    "than",
    "supply",
    "while",
    "costs",
    "stayed",
    "flat",
    "over",
    "the",
    "period",
    "under",
    "review",
]


def estimate_tokens(text: str) -> int:
    """About how many tokens ``text`` is (0 for empty text, at least 1 otherwise)."""
    if not text:
        return 0
    return max(1, round(len(text) / CHARS_PER_TOKEN))


def filler_text(tokens: int, start: int = 0) -> str:
    """Neutral prose of about ``tokens`` tokens, standing in for text not written yet
    (a datapoint before phase 3 ran, an answer before phase 4 ran); another ``start``
    gives text of the same length that differs from its first word."""
    if tokens <= 0:
        return ""
    target = int(tokens * CHARS_PER_TOKEN)
    words: list[str] = []
    size = 0
    i = start
    while size < target:
        word = _FILLER[i % len(_FILLER)]
        words.append(word)
        size += len(word) + 1
        i += 1
    return " ".join(words)
