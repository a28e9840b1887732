"""The shape layer of validation: the shipped JSON Schema, turned into readable issues.

The schema (``schema.json``, printed by ``coeval schema`` for editors) is the single source
of truth for which keys exist, their types and their allowed values. jsonschema finds the
violations; this module gives each one a rule id (by where it is in the file), a message a
person can act on, a did-you-mean suggestion for misspelt keys and values, and a fix.
"""

from __future__ import annotations

import difflib
import fnmatch
import functools
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from importlib import resources
from typing import Any

import jsonschema

from coeval.config.errors import format_path

__all__ = ["RawIssue", "config_schema", "did_you_mean", "schema_issues"]

Path = tuple[str | int, ...]
#: (rule, path, message, fix) before line numbers are attached.
RawIssue = tuple[str, Path, str, str]


@functools.cache
def config_schema() -> dict[str, Any]:
    """The JSON Schema of the config file (package data)."""
    text = resources.files("coeval.config").joinpath("schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """The closest choice to a misspelt word (case-insensitive), or None."""
    options = list(choices)
    lowered = {c.lower(): c for c in options}
    if word.lower() in lowered and lowered[word.lower()] != word:
        return lowered[word.lower()]
    match = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[match[0]] if match else None


# ---- where a problem is decides its rule --------------------------------------------------

#: (path glob, rule); the first match wins. Segments are matched one by one; '*' matches
#: any one key or index, a trailing '**' matches any deeper path.
_RULES_BY_PATH: list[tuple[str, str]] = [
    ("models", "V-01"),
    ("tasks", "V-01"),
    ("models.*.name", "V-04"),
    ("models.*.family", "V-04"),
    ("tasks.*.name", "V-04"),
    ("experiment.id", "V-04"),
    ("models.*.roles.**", "V-05"),
    ("models.*.interface", "V-06"),
    ("experiment.generation_retries", "V-12"),
    ("experiment.probe_mode", "V-15"),
    ("experiment.probe_on_fail", "V-16"),
    ("experiment.phases.**", "V-21"),
    ("tasks.*.evaluation_mode", "V-22"),
    ("tasks.*.sampling.**", "V-23"),
    ("experiment.log_level", "V-24"),
    ("experiment.quota.**", "V-25"),
    ("experiment.batch.**", "V-26"),
    ("models.*.batch_enabled", "V-26"),
    ("models.*.parameters.model", "V-27"),
    ("tasks.*.prompt_library.**", "V-28"),
    ("tasks.*.rubric.*.metric", "V-29"),
    ("tasks.*.rubric.*.evaluator", "V-47"),
    ("tasks.*.label_attributes.**", "V-30"),
    ("experiment.budget_usd", "V-31"),
    ("experiment.seed", "V-32"),
    ("models.*.role_parameters", "V-33"),
    ("tasks.*.target_attributes.**", "V-34"),
    ("tasks.*.nuanced_attributes.**", "V-34"),
    ("tasks.*.target_attributes_seed.**", "V-34"),
    ("tasks.*.nuanced_attributes_seed.**", "V-34"),
    ("tasks.*.rubric.**", "V-34"),
]

#: Unknown keys inside these mappings belong to a specific rule rather than V-18.
_UNKNOWN_KEY_RULES: list[tuple[str, str]] = [
    ("experiment.phases", "V-21"),
    ("experiment.batch.*", "V-13"),
    ("models.*.role_parameters", "V-33"),
    ("experiment.quota.*", "V-25"),
    ("tasks.*.sampling", "V-23"),
    ("tasks.*.rubric.*", "V-34"),
]


#: A missing required key is V-19, except where the seed gives it a rule of its own.
_REQUIRED_RULES: list[tuple[str, str]] = [
    ("models", "V-01"),
    ("tasks", "V-01"),
    ("models.*.roles", "V-05"),
    ("experiment.quota.*.max_calls", "V-25"),
]


def _match(pattern: str, path: Path) -> bool:
    parts = pattern.split(".")
    deep = parts[-1] == "**"
    if deep:
        parts = parts[:-1]
        if len(path) < len(parts):
            return False
    elif len(path) != len(parts):
        return False
    return all(fnmatch.fnmatchcase(str(seg), pat) for seg, pat in zip(path, parts, strict=False))


def rule_for(path: Path, table: Sequence[tuple[str, str]] = _RULES_BY_PATH, default: str = "V-20") -> str:
    for pattern, rule in table:
        if _match(pattern, path):
            return rule
    return default


# ---- turning jsonschema errors into issues --------------------------------------------------

_JSON_TYPE_WORDS = {
    "object": "a mapping",
    "array": "a list",
    "string": "text",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "null": "nothing (null)",
}


#: Python type -> JSON type name, bool before int (a bool is an int to ``isinstance``).
_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (type(None), "null"),
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def _json_type(value: Any) -> str:
    return next((name for cls, name in _JSON_TYPES if isinstance(value, cls)), type(value).__name__)


def _describe(value: Any) -> str:
    kind = _json_type(value)
    if kind in ("object", "array"):
        return _JSON_TYPE_WORDS[kind]
    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{_JSON_TYPE_WORDS.get(kind, kind)} {text}"


def _expected_words(types: Any) -> str:
    if isinstance(types, str):
        types = [types]
    return " or ".join(_JSON_TYPE_WORDS.get(t, t) for t in types)


def _resolve(schema: Any) -> Any:
    """Follow local ``$ref``s (the schema only uses ``#/$defs/...``)."""
    while isinstance(schema, Mapping) and "$ref" in schema:
        ref = schema["$ref"]
        node: Any = config_schema()
        for part in ref.lstrip("#/").split("/"):
            node = node[part]
        extra = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**node, **extra}
    return schema


def _accepted_types(schema: Any) -> set[str]:
    schema = _resolve(schema)
    if not isinstance(schema, Mapping):
        return set()
    out: set[str] = set()
    if "type" in schema:
        t = schema["type"]
        out |= {t} if isinstance(t, str) else set(t)
        if "number" in out:
            out.add("integer")
    for key in ("enum",):
        if key in schema:
            out |= {_json_type(v) for v in schema[key]}
    if "const" in schema:
        out.add(_json_type(schema["const"]))
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key, []):
            out |= _accepted_types(branch)
    return out


def _fix_of(error: jsonschema.ValidationError) -> str:
    schema = _resolve(error.schema)
    if isinstance(schema, Mapping):
        return str(schema.get("x-fix", ""))
    return ""


def _property_schema(object_schema: Any, key: str) -> Any:
    schema = _resolve(object_schema)
    if isinstance(schema, Mapping):
        return _resolve(schema.get("properties", {}).get(key, {}))
    return {}


def _unknown_keys(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    known = set(schema.get("properties", {}))
    patterns = [re.compile(p) for p in schema.get("patternProperties", {})]
    return [k for k in instance if k not in known and not any(p.search(str(k)) for p in patterns)]


def _misspelt_keys(instance: Any, schema: Mapping[str, Any]) -> set[str]:
    """The keys an unknown key of ``instance`` is a did-you-mean of (``promt`` -> ``prompt``):
    that unknown key's issue names them, so a required one is not reported missing as well."""
    if not isinstance(instance, Mapping) or schema.get("additionalProperties") is not False:
        return set()
    known = sorted(schema.get("properties", {}))
    return {guess for key in _unknown_keys(instance, schema) if (guess := did_you_mean(str(key), known))}


def _issues_for(error: jsonschema.ValidationError) -> Iterator[RawIssue]:
    path: Path = tuple(error.absolute_path)
    value = error.instance
    kind = error.validator
    where = format_path(path)

    if kind == "required":
        schema = _resolve(error.schema)
        misspelt = _misspelt_keys(value, schema)
        for key in error.validator_value:
            if isinstance(value, Mapping) and key not in value and key not in misspelt:
                child = (*path, key)
                rule = rule_for(child, _REQUIRED_RULES, default="V-19")
                fix = f"add `{key}:` to {where}"
                if rule != "V-19":
                    fix = str(_property_schema(schema, key).get("x-fix", "")) or fix
                yield rule, child, f"required key '{key}' is missing", fix
        return

    if kind == "additionalProperties":
        schema = _resolve(error.schema)
        known = sorted(schema.get("properties", {}))
        for key in _unknown_keys(value, schema):
            rule = rule_for(path, _UNKNOWN_KEY_RULES, default="V-18")
            guess = did_you_mean(str(key), known)
            message = f"unknown key '{key}'" + (f" (did you mean '{guess}'?)" if guess else "")
            if guess:
                fix = f"rename '{key}' to '{guess}'"
            elif known:
                fix = f"remove '{key}'; keys allowed here: {', '.join(known)}"
            else:
                fix = f"remove '{key}'"
            yield rule, (*path, key), message, fix
        return

    if kind in ("anyOf", "oneOf"):
        branches = [_resolve(b) for b in error.validator_value]
        actual = _json_type(value)
        fits = [i for i, b in enumerate(branches) if actual in _accepted_types(b)]
        if len(fits) == 1:
            sub = [
                e
                for e in (error.context or [])
                if e.relative_schema_path and e.relative_schema_path[0] == fits[0]
            ]
            if sub:
                for e in sub:
                    yield from _issues_for(e)
                return
        schema = _resolve(error.schema)
        expected = schema.get("x-expected") if isinstance(schema, Mapping) else None
        message = f"expected {expected or 'a different value'}, got {_describe(value)}"
        yield rule_for(path), path, message, _fix_of(error)
        return

    rule = rule_for(path)
    fix = _fix_of(error)
    if kind == "type":
        expected = _expected_words(error.validator_value)
        message = f"expected {expected}, got {_describe(value)}"
        if isinstance(value, bool) and "string" in str(error.validator_value):
            message += " (YAML reads unquoted yes/no/on/off as booleans)"
        yield rule, path, message, fix or f"write {where} as {expected}"
    elif kind == "enum" or kind == "const":
        choices = [str(c) for c in (error.validator_value if kind == "enum" else [error.validator_value])]
        guess = did_you_mean(str(value), choices) if isinstance(value, str) else None
        message = f"{value!r} is not one of: {', '.join(choices)}"
        if guess:
            message += f" (did you mean '{guess}'?)"
            fix = f"replace {value!r} with {guess}"
        yield rule, path, message, fix or f"use one of {', '.join(choices)}"
    elif kind in ("pattern", "not"):
        schema = _resolve(error.schema)
        explain = schema.get("x-message") if isinstance(schema, Mapping) else None
        yield rule, path, f"{value!r} {explain or 'has the wrong format'}", fix or "see docs/configuration.md"
    elif kind in ("minimum", "exclusiveMinimum"):
        bound = ">=" if kind == "minimum" else ">"
        yield (
            rule,
            path,
            f"must be {bound} {error.validator_value}, got {value!r}",
            fix or f"use a value {bound} {error.validator_value}",
        )
    elif kind in ("maximum", "exclusiveMaximum"):
        bound = "<=" if kind == "maximum" else "<"
        yield (
            rule,
            path,
            f"must be {bound} {error.validator_value}, got {value!r}",
            fix or f"use a value {bound} {error.validator_value}",
        )
    elif kind == "minItems":
        message = "must not be empty" if not value else f"needs at least {error.validator_value} entries"
        yield rule, path, message, fix or f"add entries to {where}"
    elif kind == "maxItems":
        yield (
            rule,
            path,
            f"has {len(value)} entries; at most {error.validator_value} allowed",
            fix or "remove entries",
        )
    elif kind == "minLength":
        yield rule, path, "must not be empty", fix or f"write a value for {where}"
    elif kind == "minProperties":
        yield rule, path, "must not be an empty mapping", fix or f"add entries to {where}"
    elif kind == "uniqueItems":
        dupes = sorted({str(v) for v in value if value.count(v) > 1})
        yield rule, path, f"lists {', '.join(dupes)} more than once", fix or "remove the repeated entries"
    else:
        yield rule, path, error.message, fix


@functools.cache
def _validator() -> Any:
    schema = config_schema()
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def _text_keys(value: Any, _active: frozenset[int] = frozenset()) -> Any:
    """``value`` with every mapping key as text. YAML allows ``null:``, ``1:`` or ``true:``
    as keys, JSON Schema only strings; ``None`` becomes ``'None'``, reported as unknown.
    Unchanged parts are returned as they are; a recursive alias is left alone."""
    if not isinstance(value, dict | list) or id(value) in _active:
        return value
    active = _active | {id(value)}
    if isinstance(value, dict):
        converted = {k if isinstance(k, str) else str(k): _text_keys(v, active) for k, v in value.items()}
        same = all(isinstance(k, str) and converted[k] is v for k, v in value.items())
        return value if same else converted
    items = [_text_keys(v, active) for v in value]
    return value if all(a is b for a, b in zip(items, value, strict=True)) else items


def schema_issues(raw: Any) -> list[RawIssue]:
    """Every shape problem of a raw config mapping, deduplicated, in document order."""
    out: list[RawIssue] = []
    seen: set[tuple[str, Path, str]] = set()
    for error in _validator().iter_errors(_text_keys(raw)):
        for rule, path, message, fix in _issues_for(error):
            key = (rule, path, message)
            if key not in seen:
                seen.add(key)
                out.append((rule, path, message, fix))
    return out
