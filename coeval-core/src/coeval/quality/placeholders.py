"""The example values the prompt templates show the model, which a reply must not repeat.

They are read from the templates themselves (the JSON example after "in this form:" or
"JSON only:"), so an edited ``prompt_library`` template contributes its own examples.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from coeval.prompts.templates import DEFAULT_TEMPLATES
from coeval.quality.text import normalise

__all__ = ["TEACHER_TEMPLATES", "template_instructions", "template_placeholders", "text_leaves"]

#: The templates whose replies the gate checks (phases 1-3).
TEACHER_TEMPLATES = ("map_target_attrs", "map_nuanced_attrs", "autorubric", "sample")
_EXAMPLE = re.compile(r"\{\{.*\}\}")


def text_leaves(value: Any, *, keys: bool = True) -> Iterable[str]:
    """Every string value of a JSON value, and every key unless ``keys`` is false, depth first."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            if keys:
                yield str(k)
            yield from text_leaves(v, keys=keys)
    elif isinstance(value, list):
        for v in value:
            yield from text_leaves(v, keys=keys)
    elif isinstance(value, str):
        yield value


def _examples(template: str, *, keys: bool = True) -> set[str]:
    found: set[str] = set()
    for match in _EXAMPLE.finditer(template):
        text = match.group(0).replace("{{", "{").replace("}}", "}")
        try:
            doc = json.loads(text)
        except json.JSONDecodeError:
            found.update(re.findall(r'"([^"]*)"', text))
            continue
        found.update(text_leaves(doc, keys=keys))
    return found


def template_placeholders(prompt_library: Mapping[str, str] | None = None, *, keys: bool = True) -> frozenset[str]:
    """Normalised example strings of the teacher templates, default and ``prompt_library``
    (structural keys such as ``name`` or ``prompt`` excluded: they are the schema, not an
    example). ``keys=False``: the example values only, what a reply must not use as a key
    (a key a template's example has is the reply's schema, whatever its name)."""
    structural = {"attributes", "name", "values", "factors", "description", "prompt", "response", "scores", "score"}
    lib = dict(prompt_library or {})
    texts = [t for tid in TEACHER_TEMPLATES for t in (DEFAULT_TEMPLATES[tid], lib.get(tid)) if isinstance(t, str)]
    out = set()
    for template in texts:
        for example in _examples(template, keys=keys):
            norm = normalise(example)
            if norm and norm not in structural:
                out.add(norm)
    return frozenset(out)


def template_instructions(template_ids: Iterable[str], prompt_library: Mapping[str, str] | None = None) -> list[str]:
    """The fixed wording of the named templates (variables removed), one string per line."""
    lib = dict(prompt_library or {})
    out: list[str] = []
    for tid in template_ids:
        text = lib.get(tid) or DEFAULT_TEMPLATES.get(tid, "")
        for line in re.sub(r"\{[a-z_]+\}", "\n", text).splitlines():
            if line.strip():
                out.append(line.strip())
    return out
