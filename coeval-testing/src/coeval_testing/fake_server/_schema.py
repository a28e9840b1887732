"""A valid, deterministic instance of a JSON Schema, for replies to structured-output requests.

Covers what model providers accept as structured-output schemas: objects with properties,
arrays, enums and consts, strings (with ``minLength``), numbers with bounds, booleans,
``anyOf`` / ``oneOf`` / ``allOf``, nullable type lists and local ``$ref`` into ``$defs``.
The choice among alternatives (enum values, array lengths) is driven by ``seed`` so that
different prompts get different but reproducible answers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

__all__ = ["schema_instance"]

_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")


def schema_instance(schema: Mapping[str, Any], seed: str = "") -> Any:
    """Return a value that validates against ``schema``; the same ``seed`` gives the same value."""
    return _Builder(schema, seed).build(schema, "$")


class _Builder:
    def __init__(self, root: Mapping[str, Any], seed: str) -> None:
        self.root = root
        self.seed = seed

    def _pick(self, path: str, n: int) -> int:
        digest = hashlib.sha256(f"{self.seed}|{path}".encode()).digest()
        return int.from_bytes(digest[:4], "big") % max(n, 1)

    def _resolve(self, ref: str) -> Mapping[str, Any]:
        node: Any = self.root
        for part in ref.lstrip("#/").split("/"):
            if part:
                node = node[part]
        resolved: Mapping[str, Any] = node
        return resolved

    def build(self, schema: Mapping[str, Any] | bool, path: str) -> Any:
        if schema is True or schema == {}:
            return f"{_WORDS[self._pick(path, len(_WORDS))]}"
        if not isinstance(schema, Mapping):
            return None
        if "$ref" in schema:
            return self.build(self._resolve(schema["$ref"]), path)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            values = list(schema["enum"])
            return values[self._pick(path, len(values))]
        for key in ("anyOf", "oneOf"):
            if key in schema:
                options = [o for o in schema[key] if not (isinstance(o, Mapping) and o.get("type") == "null")]
                return self.build(options[0] if options else schema[key][0], path)
        if "allOf" in schema:
            merged: dict[str, Any] = {}
            for part in schema["allOf"]:
                part = self._resolve(part["$ref"]) if "$ref" in part else part
                for k, v in part.items():
                    if k == "properties":
                        merged.setdefault("properties", {}).update(v)
                    elif k == "required":
                        merged.setdefault("required", []).extend(v)
                    else:
                        merged[k] = v
            return self.build(merged, path)
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind is None:
            kind = "object" if "properties" in schema else "array" if "items" in schema else "string"
        if kind == "object":
            props: Mapping[str, Any] = schema.get("properties", {})
            out = {name: self.build(sub, f"{path}.{name}") for name, sub in props.items()}
            for name in schema.get("required", []):
                out.setdefault(name, "x")
            return out
        if kind == "array":
            lo = int(schema.get("minItems", 1))
            hi = int(schema.get("maxItems", max(lo, 3)))
            n = lo + self._pick(path + "#n", hi - lo + 1)
            return [self.build(schema.get("items", {}), f"{path}[{i}]") for i in range(n)]
        if kind == "integer":
            lo = int(schema.get("minimum", 0))
            hi = int(schema.get("maximum", lo + 9))
            return lo + self._pick(path, hi - lo + 1)
        if kind == "number":
            low = float(schema.get("minimum", 0.0))
            high = float(schema.get("maximum", low + 1.0))
            return low + (high - low) * self._pick(path, 101) / 100
        if kind == "boolean":
            return bool(self._pick(path, 2))
        if kind == "null":
            return None
        words = [_WORDS[self._pick(f"{path}#{i}", len(_WORDS))] for i in range(3)]
        # a number drawn from the seed keeps strings of different calls apart (a generated
        # evaluation set has hundreds of items; three words of ten would repeat)
        text = " ".join(words) + f" {self._pick(path + '#n', 100_000)}"
        min_len = int(schema.get("minLength", 0))
        while len(text) < min_len:
            text += " " + text
        max_len = schema.get("maxLength")
        return text[: int(max_len)] if max_len is not None else text
