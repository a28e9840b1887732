"""Reading judge replies: tolerant of form, never of meaning.

Scores are ``High`` / ``Medium`` / ``Low`` (1 / 0.5 / 0). A reply is accepted when its
score can be read without doubt: any letter case, surrounding quotes, markdown emphasis,
code fences, a JSON object inside prose, ``"scores"`` wrappers, ``factor: High`` lines.
A reply that names no score, a different word, or two different scores for one factor
raises :class:`~coeval.prompts.errors.OutputParseError`: the scheduler asks again (up to
``generation_retries``) and then writes a ``failed`` record. Nothing is ever coerced to
``Low``.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from coeval.prompts.errors import OutputParseError

__all__ = [
    "SCORES",
    "SCORE_VALUES",
    "extract_json",
    "normalize_factor_name",
    "normalize_score",
    "parse_per_factor",
    "parse_rationale",
    "parse_single",
    "score_value",
]

SCORES = ("High", "Medium", "Low")
SCORE_VALUES = {"High": 1.0, "Medium": 0.5, "Low": 0.0}
_BY_FOLDED = {s.casefold(): s for s in SCORES}
_SCORE_WORD = re.compile(r"\b(high|medium|low)\b", re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n?(.*?)```", re.DOTALL)
_STRIP = " \t\r\n\"'`*_.,;:!()[]<>"


def score_value(score: str) -> float:
    return SCORE_VALUES[score]


@functools.lru_cache(maxsize=4096)  # a run compares the same few names in every judgment
def normalize_factor_name(name: str) -> str:
    """How factor names are compared: case, spaces, hyphens and punctuation do not matter."""
    return re.sub(r"[^0-9a-z]+", "_", name.casefold()).strip("_")


def normalize_score(value: Any) -> str:
    """``"high"``, ``" **Medium**. "`` -> the canonical word; anything else raises."""
    if isinstance(value, Mapping):
        for key in ("score", "rating", "grade"):
            if key in value:
                return normalize_score(value[key])
        raise OutputParseError(f"no score in {_short(value)}")
    if not isinstance(value, str):
        raise OutputParseError(f"score must be High, Medium or Low, got {_short(value)}")
    word = value.strip(_STRIP).casefold()
    if word in _BY_FOLDED:
        return _BY_FOLDED[word]
    raise OutputParseError(f"score must be High, Medium or Low, got {_short(value)}")


#: brackets tried as the start of an embedded JSON value, per candidate text: each failed
#: try costs up to the text's length, so a reply of thousands of brackets would take minutes
_MAX_JSON_STARTS = 200


class _TooDeep(OutputParseError):
    """The reply is JSON nested deeper than the parser's recursion limit (no judge writes
    that: a broken or hostile reply, failed as such rather than read as prose)."""


def extract_json(text: str) -> Any:
    """The JSON value a reply holds: the whole text, a fenced block, or the first JSON object
    embedded in prose. Raises OutputParseError when there is none."""
    if not isinstance(text, str) or not text.strip():
        raise OutputParseError("empty reply")
    candidates = [text.strip()]
    candidates += [m.group(2).strip() for m in _FENCE.finditer(text)]
    too_deep = False
    for cand in candidates:
        try:
            return json.loads(cand)
        except (json.JSONDecodeError, ValueError):
            pass
        except RecursionError:  # a reply nested thousands of levels deep: this reply's failure
            too_deep = True
    decoder = json.JSONDecoder()
    for source in candidates:
        for attempt, match in enumerate(re.finditer(r"[{\[]", source)):
            if attempt >= _MAX_JSON_STARTS:
                break
            try:
                value, _ = decoder.raw_decode(source, match.start())
            except (json.JSONDecodeError, ValueError):
                continue
            except RecursionError:
                too_deep = True
                break  # every later bracket is inside the same deep value
            if isinstance(value, dict) or (isinstance(value, list) and value):
                return value
    if too_deep:
        raise _TooDeep(f"reply is JSON nested too deep to read {_short(text)}")
    raise OutputParseError(f"no JSON found in reply {_short(text)}")


def _unwrap(obj: Any) -> Any:
    if isinstance(obj, list) and len(obj) == 1 and isinstance(obj[0], dict):
        return obj[0]
    return obj


def parse_single(text: str, factors: Sequence[str]) -> dict[str, str]:
    """All factors' scores from one ``single``-mode reply; every factor must be there."""
    if not factors:
        return {}
    try:
        obj = _unwrap(extract_json(text))
    except _TooDeep:
        raise
    except OutputParseError:
        obj = None
    if isinstance(obj, dict):
        inner = obj.get("scores")
        scores: dict[Any, Any] = inner if isinstance(inner, dict) else obj
        by_name = {normalize_factor_name(str(k)): v for k, v in scores.items()}
        out: dict[str, str] = {}
        missing = []
        for factor in factors:
            key = normalize_factor_name(factor)
            if key not in by_name:
                missing.append(factor)
                continue
            try:
                out[factor] = normalize_score(by_name[key])
            except OutputParseError as exc:
                raise OutputParseError(f"factor {factor!r}: {exc}") from None
        if not missing:
            return out
        raise OutputParseError(f"reply has no score for {', '.join(missing)}")
    return _parse_lines(text, factors)


def _parse_lines(text: str, factors: Sequence[str]) -> dict[str, str]:
    """``accuracy: High`` lines, one per factor (no JSON in the reply)."""
    out: dict[str, str] = {}
    for factor in factors:
        words = [re.escape(w) for w in re.split(r"[^0-9A-Za-z]+", factor) if w]
        # the separator run is matched atomically: a reply with a long run of spaces or
        # colons after the factor name would otherwise backtrack for minutes
        pattern = re.compile(
            r"^[\W_]*" + r"[\W_]+".join(words) + r"(?>[\W_]*[:=\-][\W_]*)(high|medium|low)\b",
            re.IGNORECASE | re.MULTILINE,
        )
        found = {_BY_FOLDED[m.group(1).casefold()] for m in pattern.finditer(text or "")}
        if len(found) != 1:
            why = "no score" if not found else "conflicting scores"
            raise OutputParseError(f"{why} for factor {factor!r} in reply {_short(text)}")
        out[factor] = found.pop()
    return out


def parse_per_factor(text: str, factor: str) -> str:
    """One factor's score from a ``per_factor`` reply: JSON (``{"score": ...}`` or
    ``{factor: ...}``), a JSON string, or text that names exactly one score word."""
    try:
        obj = _unwrap(extract_json(text))
    except _TooDeep:
        raise
    except OutputParseError:
        obj = None
    if isinstance(obj, dict):
        folded = {normalize_factor_name(str(k)): v for k, v in obj.items()}
        for key in ("score", normalize_factor_name(factor), "rating", "grade"):
            if key in folded:
                return normalize_score(folded[key])
        if isinstance(obj.get("scores"), dict):
            return parse_single(json.dumps(obj), [factor])[factor]
        if len(obj) == 1:
            return normalize_score(next(iter(obj.values())))
        raise OutputParseError(f"no score for factor {factor!r} in {_short(text)}")
    if isinstance(obj, str):
        return normalize_score(obj)
    found = {_BY_FOLDED[m.group(1).casefold()] for m in _SCORE_WORD.finditer(text or "")}
    if len(found) == 1:
        return found.pop()
    if not found:
        raise OutputParseError(f"no score (High/Medium/Low) in reply {_short(text)}")
    raise OutputParseError(f"reply names several scores ({', '.join(sorted(found))}): {_short(text)}")


def _short(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def parse_rationale(text: str | None, factors: Sequence[str]) -> dict[str, str]:
    """The judge's optional one-sentence reasons, per factor, from a structured reply:
    ``{"rationale": {factor: text}}`` (single mode) or ``{"rationale": text}`` (one factor).
    Empty when the reply has none; a missing rationale never fails a judgment."""
    try:
        obj = _unwrap(extract_json(text or ""))
    except (OutputParseError, RecursionError):
        return {}
    found = obj.get("rationale") if isinstance(obj, dict) else None
    if isinstance(found, str) and found.strip() and len(factors) == 1:
        return {factors[0]: found.strip()}
    if not isinstance(found, dict):
        return {}
    by_name = {normalize_factor_name(str(k)): v for k, v in found.items()}
    out: dict[str, str] = {}
    for factor in factors:
        reason = by_name.get(normalize_factor_name(factor))
        if isinstance(reason, str) and reason.strip():
            out[factor] = reason.strip()
    return out
