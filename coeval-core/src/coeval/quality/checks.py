"""The built-in item checks (rule ids and thresholds are documented in docs/item-quality.md)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from coeval.prompts.lengths import implied_min_words
from coeval.quality.model import DATAPOINT, MAP_KINDS, Candidate, CheckContext
from coeval.quality.placeholders import template_instructions
from coeval.quality.text import has_word_run, normalise, words

__all__ = ["BUILTIN_CHECKS", "implied_min_words"]

#: Symbols that make a very short reference look like a code fragment rather than an answer.
_FRAGMENT_SYMBOLS = set("{}[];<>")
_FRAGMENT_MAX_CHARS = 6


def template_echo(c: Candidate, ctx: CheckContext) -> str | None:
    """A reply that repeats the template's own example values. In an attribute map or a
    rubric, a short name (up to ``_NAME_WORDS`` words) that merely glues words onto an
    example (``criterion_nameone``) counts too: small models vary the example that way. So
    does a key of the reply as written that is an example value (``{"dimension_name": ...}``
    beside the real entries, which the parser would drop)."""
    names = c.kind in MAP_KINDS
    for text in _strings(c.value):
        norm = normalise(text)
        if norm in ctx.placeholders or (names and _glued_example(norm, ctx.placeholders)):
            return f"{text!r} is the example from the instructions, not a real value; write your own"
    for key in _keys(c.reply):
        norm = normalise(key)
        if norm in ctx.key_placeholders or _glued_example(norm, ctx.key_placeholders):
            return f"the reply uses {key!r}, the example from the instructions, as a key; write your own"
    return None


def _keys(value: Any) -> Iterable[str]:
    """Every mapping key of a JSON value, depth first."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield str(k)
            yield from _keys(v)
    elif isinstance(value, list):
        for v in value:
            yield from _keys(v)


#: Longest map name (in words) checked for an example glued into it.
_NAME_WORDS = 6


def _glued_example(norm: str, placeholders: Iterable[str]) -> bool:
    """Whether a short name, spaces removed, contains a multi-word example, spaces removed."""
    if len(norm.split()) > _NAME_WORDS:
        return False
    squashed = norm.replace(" ", "")
    return any(" " in p and p.replace(" ", "") in squashed for p in placeholders)


def reference_empty(c: Candidate, ctx: CheckContext) -> str | None:
    """An empty reference, one of punctuation/brackets only, or a fragment of at most 6
    characters with more of ``{}[];<>`` than letters and digits (``{2}``; ``break;`` passes)."""
    ref = str(c.value.get("response", "")).strip()
    if not any(ch.isalnum() for ch in ref):
        return f"the reference answer {ref!r} has no words; write a complete reference answer"
    compact = re.sub(r"\s+", "", ref)
    symbols = sum(ch in _FRAGMENT_SYMBOLS for ch in compact)
    if len(compact) <= _FRAGMENT_MAX_CHARS and symbols > sum(ch.isalnum() for ch in compact):
        return f"the reference answer {ref!r} is a code fragment, not an answer; write a complete reference answer"
    return None


def reference_short(c: Candidate, ctx: CheckContext) -> str | None:
    """A reference far shorter than ``output_description`` implies (below ``ratio`` of it)."""
    need = implied_min_words(c.task.output_description)
    have = len(words(str(c.value.get("response", ""))))
    if need > 1 and have < float(ctx.options.get("ratio", 0.25)) * need:
        return f"the reference answer has {have} words but the task asks for about {need} or more; write it in full"
    return None


def copies_task(c: Candidate, ctx: CheckContext) -> str | None:
    """A prompt or reference that copies the task description or the instructions verbatim."""
    run = int(ctx.options.get("min_run", 12))
    sources = [c.task.description, c.task.output_description,
               *template_instructions(("sample",), c.task.prompt_library)]
    for field in ("prompt", "response"):
        text = str(c.value.get(field, ""))
        for source in sources:
            if source.strip() and has_word_run(text, source, run):
                return f"the {field} copies the task description or instructions; write a concrete item instead"
    return None


def reference_leak(c: Candidate, ctx: CheckContext) -> str | None:
    """A prompt that contains its own reference answer (references of ``min_words`` or more)."""
    ref = normalise(str(c.value.get("response", "")))
    if len(ref.split()) < int(ctx.options.get("min_words", 4)):
        return None
    if f" {ref} " in f" {normalise(str(c.value.get('prompt', '')))} ":
        return "the prompt contains the reference answer; the item must not give its answer away"
    return None


def near_duplicate(c: Candidate, ctx: CheckContext) -> str | None:
    """A prompt too similar (word-shingle Jaccard >= ``threshold``) to an accepted item of
    the same task and teacher."""
    threshold = float(ctx.options.get("threshold", 0.8))
    score = ctx.index.most_similar(c.task.name, c.teacher, str(c.value.get("prompt", "")), at_least=threshold)
    if score >= threshold:
        return f"the prompt repeats an earlier item (similarity {score:.2f}); write a different item"
    return None


def map_entries(c: Candidate, ctx: CheckContext) -> str | None:
    """Attribute values or rubric factors that are empty or duplicated."""
    seen: set[str] = set()
    for name, entry in c.value.items():
        key = normalise(str(name))
        if not key:
            return "an attribute or factor has an empty name"
        if key in seen:
            return f"{name!r} appears twice"
        seen.add(key)
        if c.kind == "rubric":
            if not normalise(_description(entry)):
                return f"factor {name!r} has an empty description"
            continue
        values = [entry] if isinstance(entry, str) else list(entry or [])
        normed = [normalise(str(v)) for v in values]
        if not values or not all(normed):
            return f"attribute {name!r} has an empty value"
        if len(set(normed)) != len(normed):
            return f"attribute {name!r} repeats a value"
    return None


def map_keeps_seed(c: Candidate, ctx: CheckContext) -> str | None:
    """A proposal that drops a seeded attribute or an inherited rubric factor it was told to
    keep. Off by default: the merge puts the seeds back anyway."""
    names = {normalise(str(n)) for n in c.value}
    for seed in c.seeds:
        missing = [str(n) for n in seed if normalise(str(n)) not in names]
        if missing:
            return f"the reply drops entries it had to keep: {', '.join(missing)}"
    return None


def _description(entry: Any) -> str:
    if isinstance(entry, Mapping):
        return str(entry.get("description") or entry.get("criterion") or "")
    return str(entry or "")


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, str):
        yield value


_ALL = (DATAPOINT, *MAP_KINDS)

#: rule id -> (check, kinds it applies to, default options; ``enabled: False`` = off by default)
BUILTIN_CHECKS: dict[str, tuple[Any, tuple[str, ...], dict[str, Any]]] = {
    "template_echo": (template_echo, _ALL, {}),
    "reference_empty": (reference_empty, (DATAPOINT,), {}),
    "reference_short": (reference_short, (DATAPOINT,), {"ratio": 0.25}),
    "copies_task": (copies_task, (DATAPOINT,), {"min_run": 12}),
    "reference_leak": (reference_leak, (DATAPOINT,), {"min_words": 4}),
    "near_duplicate": (near_duplicate, (DATAPOINT,), {"threshold": 0.8}),
    "map_entries": (map_entries, MAP_KINDS, {}),
    "map_keeps_seed": (map_keeps_seed, MAP_KINDS, {"enabled": False}),
}
