"""What the ``mock`` interface says: valid, deterministic, plausible content.

Everything here is a pure function of a :class:`Dice` (a hash of seed, model and prompt),
so the same request always gets the same answer, in any order and under any concurrency.

* With a JSON schema: a valid instance of it (objects, properties, required,
  additionalProperties, arrays, enums, consts, strings, integers, numbers, booleans,
  ``$ref``/``anyOf``), shaped by ``schema_name`` so attribute maps, rubrics and datapoints
  read like the real thing.
* Datapoints follow the task: the item's prompt is built from the task description and
  characteristics the generation prompt names, and the reference answer is as long as
  the output description asks ("at least 80 words", "3-5 sentences", "a paragraph", read
  the way the item-quality gate reads them), so mock datapoints pass that gate.
* Students answer in sentences whose share of "solid" ones is the student's ``quality``;
  mock judges read that share back from the answer quoted in their prompt, so their
  High/Medium/Low scores separate good mock students from weak ones (a judge's own
  ``quality`` is how reliably it follows that signal instead of guessing).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from coeval.interfaces.mock_design import JudgeFaults, author_of
from coeval.prompts.lengths import implied_min_words

__all__ = ["SCORE_VALUES", "Dice", "answer_quality", "free_text", "malformed_text", "schema_instance"]

SCORE_VALUES = ("High", "Medium", "Low")
SOLID_MARK = "Specifically,"
WEAK_MARK = "Vaguely,"

_TARGET_POOL: dict[str, tuple[str, ...]] = {
    "difficulty": ("easy", "medium", "hard"),
    "length": ("short", "medium", "long"),
    "tone": ("formal", "neutral", "casual"),
    "audience": ("beginner", "practitioner", "expert"),
    "format": ("paragraph", "bullet_list", "step_by_step"),
    "scope": ("narrow", "broad"),
}
_NUANCE_POOL: dict[str, tuple[str, ...]] = {
    "style": ("plain", "vivid", "technical"),
    "perspective": ("first_person", "third_person"),
    "setting": ("everyday", "workplace", "academic"),
    "ambiguity": ("clear", "slightly_ambiguous"),
    "noise": ("clean", "typos", "extra_detail"),
}
_RUBRIC_POOL: dict[str, str] = {
    "accuracy": "The response is factually and logically correct.",
    "completeness": "The response covers every part of the request.",
    "clarity": "The response is easy to follow and well organised.",
    "relevance": "The response stays on the request without padding.",
    "conciseness": "The response says what is needed and no more.",
    "helpfulness": "The response would actually help the person who asked.",
}
_WORDS = (
    "signal", "harbor", "lattice", "meadow", "vector", "quartz", "ember", "orbit", "cobalt", "summit",
    "ledger", "canopy", "delta", "fable", "garnet", "horizon", "island", "juniper", "kernel", "lantern",
)
_STOP = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "how", "in", "is", "it", "of", "on", "or", "that", "the", "this", "to", "with", "you", "your", "what", "which", "write", "given", "task", "answer", "response", "prompt", "reply", "json", "following", "question", "explain", "describe", "about", "please", "into", "using", "create", "generate", "should", "would", "could", "their", "there", "these", "those", "then", "than", "also", "only"]
)


class Dice:
    """Uniform numbers in [0, 1) derived from a key: ``dice.u("label")`` is the same every time."""

    __slots__ = ("_key",)

    def __init__(self, *parts: object) -> None:
        self._key = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=16).digest()

    def u(self, label: str = "") -> float:
        digest = hashlib.blake2b(label.encode(), key=self._key, digest_size=8).digest()
        return int.from_bytes(digest, "big") / 2.0**64

    def pick(self, options: Sequence[Any], label: str = "") -> Any:
        return options[min(len(options) - 1, int(self.u(label) * len(options)))]

    def between(self, low: int, high: int, label: str = "") -> int:
        return low + min(high - low, int(self.u(label) * (high - low + 1)))


def topic_words(prompt: str, n: int = 4) -> list[str]:
    """A few content words of the prompt, so replies read as being about it."""
    seen: list[str] = []
    for word in re.findall(r"[A-Za-z][A-Za-z-]{3,}", prompt[:600]):
        w = word.lower()
        if w not in _STOP and w not in seen:
            seen.append(w)
            if len(seen) == n:
                break
    return seen or ["the", "subject"]


_TASK_LINE = re.compile(r"^Task: (.+)$", re.MULTILINE)
_GOOD_ANSWER_LINE = re.compile(r"^(?:A good answer(?: to the task)?|Answer format): (.+)$", re.MULTILINE)
_CHARACTERISTICS = re.compile(r"characteristics: (\{[^\n]*\})")


def task_of(prompt: str) -> str | None:
    """The task description a phase prompt names (its ``Task:`` line), if any."""
    found = _TASK_LINE.search(prompt)
    return found.group(1).strip() if found else None


def wanted_words(prompt: str) -> int:
    """How many words the prompt's output description asks for, read as the item-quality
    gate reads it (0 when it names no length)."""
    found = _GOOD_ANSWER_LINE.search(prompt)
    if found is None:
        return 0
    return implied_min_words(found.group(1))


def _sentences(dice: Dice, topic: str, words: int, label: str) -> str:
    """Plain sentences about ``topic`` adding up to at least ``words`` words."""
    out: list[str] = []
    count = 0
    i = 0
    while count < words:
        sentence = (f"The {dice.pick(_WORDS, f'{label}{i}a')} part of {topic} matters because it shapes the "
                    f"{dice.pick(_WORDS, f'{label}{i}b')} step that follows.")
        out.append(sentence)
        count += sentence.count(" ") + 1
        i += 1
    return " ".join(out)


# ---------------------------------------------------------------------- free text


def free_text(dice: Dice, prompt: str, role: str, quality: float, signature: str = "") -> str:
    """A reply with no schema: students answer with quality-dependent sentences, then
    ``signature`` (who wrote it, for judges that play a bias)."""
    topic = " ".join(topic_words(prompt, 3))
    if role != "student":
        return f"Here is a considered reply about {topic}: the main points are {dice.pick(_WORDS, 'w1')} and {dice.pick(_WORDS, 'w2')}."
    sentences = []
    need = wanted_words(prompt)
    for i in range(max(6, -(-need // 11))):
        if dice.u(f"s{i}") < quality:
            sentences.append(f"{SOLID_MARK} {topic} is handled step {i + 1} with a checked result ({dice.pick(_WORDS, f'w{i}')}).")
        else:
            sentences.append(f"{WEAK_MARK} {topic} might be something like {dice.pick(_WORDS, f'w{i}')}, I am not sure.")
    if signature:
        sentences.append(signature)
    return " ".join(sentences)


def answer_quality(prompt: str) -> float | None:
    """The share of solid sentences in a mock student's answer quoted in ``prompt``."""
    solid = prompt.count(SOLID_MARK)
    weak = prompt.count(WEAK_MARK)
    if solid + weak == 0:
        return None
    return solid / (solid + weak)


def judge_score(
    dice: Dice, prompt: str, factor: str, reliability: float, options: Sequence[str], faults: JudgeFaults | None = None
) -> str:
    """High/Medium/Low for one factor: follows the answer's quality with probability
    ``reliability``, guesses otherwise; ``faults`` (a judge design) can flatten, bias or
    blur it. ``options`` keeps the schema's spelling."""
    by_lower = {o.lower(): o for o in options}
    if faults is not None and faults.flat is not None and faults.flat in by_lower:
        return by_lower[faults.flat]
    signal = answer_quality(prompt)
    if signal is None or dice.u(f"trust:{factor}") >= reliability:
        return str(dice.pick(list(options), f"guess:{factor}"))
    level = signal + (dice.u(f"noise:{factor}") - 0.5) * 0.3
    if faults is not None:
        level = faults.perceive(level, author_of(prompt), dice.u(f"design-noise:{factor}"))
    word = "high" if level >= 0.66 else "medium" if level >= 0.33 else "low"
    return by_lower.get(word, options[0])


# ---------------------------------------------------------------------- malformed replies


def malformed_text(dice: Dice, valid: str) -> str:
    """A reply no parser that refuses to guess can use (truncated JSON, or prose)."""
    if dice.u("malformed-kind") < 0.5 and len(valid) > 4:
        return valid[: max(2, len(valid) // 2)].rstrip("}] ,")
    return "I have looked at this carefully and my overall impression is positive, but I will not give a structured answer."


# ---------------------------------------------------------------------- schema instances


class _Context:
    __slots__ = ("dice", "faults", "prompt", "quality", "root", "schema_name", "topic")

    def __init__(
        self, dice: Dice, prompt: str, schema_name: str, root: Mapping[str, Any], quality: float,
        faults: JudgeFaults | None = None,
    ) -> None:
        self.dice = dice
        self.faults = faults
        self.prompt = prompt
        self.schema_name = schema_name
        self.root = root
        self.quality = quality
        self.topic = " ".join(topic_words(task_of(prompt) or prompt, 3))


def schema_instance(
    schema: Mapping[str, Any], dice: Dice, prompt: str, schema_name: str = "reply", quality: float = 0.8,
    faults: JudgeFaults | None = None,
) -> Any:
    """A valid instance of ``schema``, plausible for ``schema_name`` (judge levels played
    with ``faults``)."""
    ctx = _Context(dice, prompt, schema_name, schema, quality, faults)
    return _value(ctx, schema, path="$", key=None)


def _resolve(ctx: _Context, schema: Mapping[str, Any]) -> Mapping[str, Any]:
    seen = 0
    while "$ref" in schema and seen < 20:
        ref = str(schema["$ref"])
        target: Any = ctx.root
        if ref.startswith("#"):
            for part in ref.lstrip("#/").split("/"):
                if part:
                    target = target.get(part.replace("~1", "/").replace("~0", "~"), {}) if isinstance(target, Mapping) else {}
        else:
            target = {}
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        seen += 1
    return schema


def _value(ctx: _Context, schema: Any, path: str, key: str | None) -> Any:
    if schema is True or not isinstance(schema, Mapping):
        return _string(ctx, {}, path, key)
    schema = _resolve(ctx, schema)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return _enum(ctx, list(schema["enum"]), path, key)
    for combinator in ("anyOf", "oneOf"):
        if schema.get(combinator):
            options = [s for s in schema[combinator] if not (isinstance(s, Mapping) and s.get("type") == "null")]
            chosen = options[0] if options else schema[combinator][0]
            merged = {**{k: v for k, v in schema.items() if k != combinator}, **_resolve(ctx, chosen)}
            return _value(ctx, merged, path, key)
    if schema.get("allOf"):
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            part = _resolve(ctx, part)
            for k, v in part.items():
                if k in ("properties",) and k in merged:
                    merged[k] = {**merged[k], **v}
                elif k == "required" and k in merged:
                    merged[k] = list(dict.fromkeys([*merged[k], *v]))
                else:
                    merged.setdefault(k, v)
        return _value(ctx, merged, path, key)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        if "properties" in schema or "additionalProperties" in schema:
            kind = "object"
        elif "items" in schema:
            kind = "array"
        else:
            kind = "string"
    if kind == "object":
        return _object(ctx, schema, path)
    if kind == "array":
        return _array(ctx, schema, path, key)
    if kind == "integer":
        return _integer(ctx, schema, path)
    if kind == "number":
        return _number(ctx, schema, path)
    if kind == "boolean":
        return ctx.dice.u(path) < 0.5
    if kind == "null":
        return None
    return _string(ctx, schema, path, key)


def _enum(ctx: _Context, options: list[Any], path: str, key: str | None) -> Any:
    if not options:
        return None
    lowered = {str(o).lower() for o in options}
    if lowered and lowered <= {"high", "medium", "low"} and all(isinstance(o, str) for o in options):
        return judge_score(ctx.dice, ctx.prompt, key or path, ctx.quality, options, ctx.faults)
    return ctx.dice.pick(options, path)


def _map_keys(ctx: _Context, count: int) -> list[str]:
    name = ctx.schema_name
    if name == "target_attributes":
        pool: Sequence[str] = list(_TARGET_POOL)
    elif name == "nuanced_attributes":
        pool = list(_NUANCE_POOL)
    elif name == "rubric":
        pool = list(_RUBRIC_POOL)
    else:
        pool = [f"{w}_field" for w in _WORDS]
    # a deterministic rotation of the pool: different prompts get different selections
    start = ctx.dice.between(0, len(pool) - 1, "map-start")
    rotated = [*pool[start:], *pool[:start]]
    keys = rotated[:count]
    i = 0
    while len(keys) < count:  # more keys asked for than the pool holds
        keys.append(f"{rotated[i % len(rotated)]}_{i // len(rotated) + 2}")
        i += 1
    return keys


def _object(ctx: _Context, schema: Mapping[str, Any], path: str, entry: str | None = None) -> dict[str, Any]:
    """An object. ``entry`` names the attribute or factor this object describes when it is
    one entry of a list-shaped map (``[{"name": ..., "values": [...]}, ...]``)."""
    props: Mapping[str, Any] = schema.get("properties") or {}
    out: dict[str, Any] = {}
    for name, sub in props.items():
        if entry is not None and name == "name":
            out[name] = entry
        else:
            out[name] = _value(ctx, sub, f"{path}.{name}", entry if entry is not None else name)
    extra = schema.get("additionalProperties", True)
    min_props = int(schema.get("minProperties", 0) or 0)
    max_props = schema.get("maxProperties")
    if not props and extra is not False:
        # a free-form map: attribute maps and rubrics are shaped like this
        wanted = max(min_props, ctx.dice.between(2, 4, f"{path}#n") if ctx.schema_name in _MAP_SCHEMAS else 2)
        if max_props is not None:
            wanted = min(wanted, int(max_props))
        value_schema = extra if isinstance(extra, Mapping) else {"type": "string"}
        for name in _map_keys(ctx, wanted):
            out[name] = _value(ctx, value_schema, f"{path}.{name}", name)
    elif min_props > len(out) and extra is not False:
        value_schema = extra if isinstance(extra, Mapping) else {"type": "string"}
        for i in range(min_props - len(out)):
            out[f"extra_{i + 1}"] = _value(ctx, value_schema, f"{path}.extra_{i + 1}", f"extra_{i + 1}")
    return out


_MAP_SCHEMAS = frozenset({"target_attributes", "nuanced_attributes", "rubric"})


def _array(ctx: _Context, schema: Mapping[str, Any], path: str, key: str | None) -> list[Any]:
    items = schema.get("items", {})
    low = int(schema.get("minItems", 0) or 0)
    high = schema.get("maxItems")
    pool = _attribute_values(ctx, key)
    default = len(pool) if pool else 3
    count = max(low, default if high is None else min(default, int(high)))
    if high is not None:
        count = min(count, int(high))
    if isinstance(items, list):  # tuple form (draft 4..2019)
        return [_value(ctx, s, f"{path}[{i}]", key) for i, s in enumerate(items[:count])]
    item_schema = _resolve(ctx, items) if isinstance(items, Mapping) else {}
    if ctx.schema_name in _MAP_SCHEMAS and "name" in (item_schema.get("properties") or {}):
        # a map in list form (the strict structured-output shape): one entry per name
        n = ctx.dice.between(2, 4, f"{path}#n")
        n = max(low, n if high is None else min(n, int(high)))
        return [_object(ctx, item_schema, f"{path}[{i}]", entry=name) for i, name in enumerate(_map_keys(ctx, n))]
    if pool and item_schema.get("type", "string") == "string" and "enum" not in item_schema:
        values = list(pool)
        while len(values) < count:
            values.append(f"{pool[len(values) % len(pool)]}_{len(values) // len(pool) + 1}")
        return values[:count]
    out = [_value(ctx, item_schema, f"{path}[{i}]", key) for i in range(count)]
    if schema.get("uniqueItems"):
        unique: list[Any] = []
        for i, v in enumerate(out):
            while v in unique and isinstance(v, str):
                v = f"{v}_{i}"
            unique.append(v)
        out = unique
    return out


def _attribute_values(ctx: _Context, key: str | None) -> tuple[str, ...] | None:
    if key is None:
        return None
    if ctx.schema_name == "target_attributes":
        return _TARGET_POOL.get(key) or _TARGET_POOL.get(key.rsplit("_", 1)[0])
    if ctx.schema_name == "nuanced_attributes":
        return _NUANCE_POOL.get(key) or _NUANCE_POOL.get(key.rsplit("_", 1)[0])
    return None


def _integer(ctx: _Context, schema: Mapping[str, Any], path: str) -> int:
    low, high = _bounds(schema, 0, 10)
    low_i = int(-(-low // 1))  # ceil
    high_i = int(high // 1)
    if high_i < low_i:
        high_i = low_i
    return ctx.dice.between(low_i, high_i, path)


def _number(ctx: _Context, schema: Mapping[str, Any], path: str) -> float:
    low, high = _bounds(schema, 0.0, 1.0)
    return round(low + (high - low) * ctx.dice.u(path), 4) if high > low else float(low)


def _bounds(schema: Mapping[str, Any], low: float, high: float) -> tuple[float, float]:
    if "minimum" in schema:
        low = float(schema["minimum"])
    if "exclusiveMinimum" in schema and not isinstance(schema["exclusiveMinimum"], bool):
        low = float(schema["exclusiveMinimum"]) + 1e-6
    if "maximum" in schema:
        high = float(schema["maximum"])
    if "exclusiveMaximum" in schema and not isinstance(schema["exclusiveMaximum"], bool):
        high = float(schema["exclusiveMaximum"]) - 1e-6
    if high < low:  # only one bound given, on the far side of the default range
        span = 10.0
        has_min = "minimum" in schema or "exclusiveMinimum" in schema
        if has_min:
            high = low + span
        else:
            low = high - span
    return low, high


def _string(ctx: _Context, schema: Mapping[str, Any], path: str, key: str | None) -> str:
    text = _string_content(ctx, key, path)
    low = int(schema.get("minLength", 0) or 0)
    high = schema.get("maxLength")
    if len(text) < low:
        text = (text + " " + " ".join(_WORDS)) * (low // max(1, len(text)) + 1)
        text = text[: max(low, 1)]
    if high is not None and len(text) > int(high):
        text = text[: int(high)]
    return text


def _string_content(ctx: _Context, key: str | None, path: str) -> str:
    k = (key or "").lower()
    dice = ctx.dice
    name = ctx.schema_name
    if name == "rubric" and key in _RUBRIC_POOL:
        return _RUBRIC_POOL[key]
    if name == "rubric" or k in ("description", "criterion", "criteria"):
        return f"The response handles {key or 'this aspect'} well for a request about {ctx.topic}."
    if any(s in k for s in ("prompt", "question", "input", "instruction")):
        task = task_of(ctx.prompt)
        if task is not None:  # an item for the task the generation prompt names
            found = _CHARACTERISTICS.search(ctx.prompt)
            traits = ""
            if found:
                try:
                    traits = ", ".join(f"{a} {v}" for a, v in json.loads(found.group(1)).items())
                except (ValueError, AttributeError):
                    traits = ""
            # the task's own words, not its sentence: an item that copies the description is rejected
            subject = " ".join(topic_words(task, 8))
            return (f"A {subject} case{f' ({traits})' if traits else ''}: it involves "
                    f"{dice.pick(_WORDS, path + 'a')}, {dice.pick(_WORDS, path + 'b')} and "
                    f"{dice.pick(_WORDS, path + 'c')} (case {dice.between(1, 99_999, path + 'n')}).")
        return (
            f"Regarding {ctx.topic}: explain how {dice.pick(_WORDS, path + 'a')} relates to "
            f"{dice.pick(_WORDS, path + 'b')}, and give one example."
        )
    if any(s in k for s in ("response", "answer", "output", "reference", "solution")):
        text = (
            f"{dice.pick(_WORDS, path + 'a').capitalize()} relates to {dice.pick(_WORDS, path + 'b')} "
            f"through {ctx.topic}; for example, one feeds the other step by step."
        )
        need = wanted_words(ctx.prompt)
        if need > 15:  # as long as the task's output description asks, with a margin
            text = f"{text} {_sentences(dice, ctx.topic, need - 15 + max(3, need // 10), path)}"
        return text
    if any(s in k for s in ("reason", "explanation", "rationale", "justification", "comment")):
        return f"Judged against the rubric for {ctx.topic}."
    if k in ("id", "name", "label"):
        return f"{dice.pick(_WORDS, path)}-{dice.between(1, 999, path + 'n')}"
    return f"{dice.pick(_WORDS, path)} {dice.pick(_WORDS, path + '2')}"


def to_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
