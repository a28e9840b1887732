"""JSON schemas for structured teacher and judge output, and the parsers of those replies.

Schemas are in the strict subset providers accept for structured output (every object
closed with ``additionalProperties: false`` and all properties required), which is why
attribute maps and rubrics are lists of ``{name, ...}`` objects rather than free maps.
Parsers accept that form and the plain mapping a hand-written template may ask for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from coeval.prompts.errors import OutputParseError
from coeval.prompts.judging import SCORES, extract_json

__all__ = [
    "ATTRIBUTES_SCHEMA",
    "DATAPOINT_SCHEMA",
    "JUDGE_FACTOR_SCHEMA",
    "RUBRIC_SCHEMA",
    "judge_single_schema",
    "parse_attribute_map",
    "parse_datapoint",
    "parse_rubric",
]

_STR = {"type": "string"}

ATTRIBUTES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "attributes": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {"name": _STR, "values": {"type": "array", "items": _STR, "minItems": 1}},
                "required": ["name", "values"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["attributes"],
    "additionalProperties": False,
}

RUBRIC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "factors": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {"name": _STR, "description": _STR},
                "required": ["name", "description"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["factors"],
    "additionalProperties": False,
}

DATAPOINT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"prompt": _STR, "response": _STR},
    "required": ["prompt", "response"],
    "additionalProperties": False,
}

_SCORE = {"type": "string", "enum": list(SCORES)}

JUDGE_FACTOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"score": _SCORE, "rationale": _STR},
    "required": ["score"],
    "additionalProperties": False,
}


def judge_single_schema(factors: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "scores": {
                "type": "object",
                "properties": {f: _SCORE for f in factors},
                "required": list(factors),
                "additionalProperties": False,
            },
            # optional: a one-sentence reason per factor, kept in the record for `coeval view`
            "rationale": {
                "type": "object",
                "properties": {f: _STR for f in factors},
                "additionalProperties": False,
            },
        },
        "required": ["scores"],
        "additionalProperties": False,
    }


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise OutputParseError(f"expected a non-empty name, got {value!r}")
    return value.strip()


def parse_attribute_map(text: str) -> dict[str, list[str]]:
    """``{"attributes": [{"name", "values"}]}`` or ``{name: [values]}`` -> ``{name: [values]}``."""
    obj = extract_json(text)
    items: list[tuple[Any, Any]]
    if isinstance(obj, Mapping) and "attributes" in obj:
        inner = obj["attributes"]
        if isinstance(inner, Mapping):
            items = list(inner.items())
        elif isinstance(inner, list):
            items = [(d.get("name"), d.get("values")) if isinstance(d, Mapping) else (None, None) for d in inner]
        else:
            raise OutputParseError("'attributes' must be a list or a mapping")
    elif isinstance(obj, Mapping):
        items = list(obj.items())
    else:
        raise OutputParseError("expected a JSON object of attributes")
    out: dict[str, list[str]] = {}
    for name, values in items:
        key = _name(name)
        if isinstance(values, str):
            values = [values]
        if not isinstance(values, list):
            raise OutputParseError(f"attribute {key!r}: values must be a list")
        vals = [str(v).strip() for v in values if isinstance(v, str | int | float) and str(v).strip()]
        if vals:
            out.setdefault(key, [])
            out[key] += [v for v in vals if v not in out[key]]
    if not out:
        raise OutputParseError("the reply proposes no attribute with values")
    return out


def parse_rubric(text: str) -> dict[str, str]:
    """``{"factors": [{"name", "description"}]}`` or ``{name: description}``."""
    obj = extract_json(text)
    items: list[tuple[Any, Any]]
    if isinstance(obj, Mapping) and "factors" in obj:
        inner = obj["factors"]
        if isinstance(inner, Mapping):
            items = list(inner.items())
        elif isinstance(inner, list):
            items = [(d.get("name"), d.get("description")) if isinstance(d, Mapping) else (None, None) for d in inner]
        else:
            raise OutputParseError("'factors' must be a list or a mapping")
    elif isinstance(obj, Mapping):
        items = list(obj.items())
    else:
        raise OutputParseError("expected a JSON object of rubric factors")
    out: dict[str, str] = {}
    for name, desc in items:
        key = _name(name)
        if not isinstance(desc, str) or not desc.strip():
            raise OutputParseError(f"factor {key!r}: description must be a non-empty string")
        out.setdefault(key, desc.strip())
    if not out:
        raise OutputParseError("the reply proposes no rubric factor")
    return out


def parse_datapoint(text: str) -> dict[str, str]:
    """``{"prompt": ..., "response": ...}``, both non-empty strings."""
    obj = extract_json(text)
    if isinstance(obj, list) and len(obj) == 1:
        obj = obj[0]
    if not isinstance(obj, Mapping):
        raise OutputParseError("expected a JSON object with 'prompt' and 'response'")
    folded = {str(k).strip().casefold(): v for k, v in obj.items()}
    prompt = folded.get("prompt")
    response = folded.get("response", folded.get("reference_response"))
    for field, value in (("prompt", prompt), ("response", response)):
        if not isinstance(value, str) or not value.strip():
            raise OutputParseError(f"'{field}' must be a non-empty string")
    return {"prompt": prompt, "response": response}  # type: ignore[dict-item]
