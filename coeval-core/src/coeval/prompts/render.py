"""Choosing and filling prompt templates.

Resolution order for template ``ID`` and model ``M`` of a task: ``prompt_library["ID.M"]``,
then ``prompt_library["ID"]``, then the canonical template.

Rendering scans the *template* once: ``{{``/``}}`` become braces, ``{name}`` becomes the
variable's value, inserted as is. Values are never scanned again, so a task text, a
datapoint or a student's answer full of ``{`` and ``}`` cannot break a prompt. Braces that
do not form a variable reference (``{"prompt": ...}`` written without doubling) are kept
literally rather than raising, as a user writing JSON examples would expect.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from coeval.prompts.templates import ALIASES, DEFAULT_TEMPLATES, TEMPLATE_IDS, TEMPLATE_VARIABLES

__all__ = [
    "PromptTemplateError",
    "format_value",
    "render",
    "render_prompt",
    "resolve_template",
    "template_fields",
    "unknown_variables",
    "validate_prompt_library",
]

_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


class PromptTemplateError(ValueError):
    """A template names a variable its phase does not provide."""


def template_fields(text: str) -> list[str]:
    """Variable names a template refers to, in order of first use."""
    seen: list[str] = []
    for m in _TOKEN.finditer(text):
        name = m.group(1)
        if name and name not in seen:
            seen.append(name)
    return seen


def unknown_variables(template_id: str, text: str) -> list[str]:
    allowed = TEMPLATE_VARIABLES[template_id]
    return [name for name in template_fields(text) if name not in allowed]


def validate_prompt_library(library: Mapping[str, str]) -> list[str]:
    """Problems with a task's ``prompt_library`` (unknown ids, unknown variables), one line each.

    Keys are ``ID`` or ``ID.MODEL`` (model names may contain dots, the id never does)."""
    problems = []
    for key, text in library.items():
        template_id = key.split(".", 1)[0]
        if template_id not in TEMPLATE_IDS:
            problems.append(f"{key}: unknown template id {template_id!r} (known: {', '.join(TEMPLATE_IDS)})")
            continue
        if not isinstance(text, str):
            problems.append(f"{key}: a template must be a string")
            continue
        bad = unknown_variables(template_id, text)
        if bad:
            allowed = ", ".join("{" + v + "}" for v in sorted(TEMPLATE_VARIABLES[template_id]))
            problems.append(f"{key}: unknown variable {', '.join('{' + b + '}' for b in bad)}; {template_id} allows {allowed}")
    return problems


def resolve_template(template_id: str, prompt_library: Mapping[str, str] | None, model_name: str | None) -> str:
    if template_id not in TEMPLATE_IDS:
        raise PromptTemplateError(f"unknown template id {template_id!r}")
    library = prompt_library or {}
    if model_name is not None and f"{template_id}.{model_name}" in library:
        return library[f"{template_id}.{model_name}"]
    if template_id in library:
        return library[template_id]
    return DEFAULT_TEMPLATES[template_id]


def format_value(value: Any) -> str:
    """How a variable's value appears in a prompt: text as is, structures as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def render(text: str, variables: Mapping[str, Any], *, template_id: str | None = None) -> str:
    """Fill ``text`` with ``variables`` (aliases resolved)."""
    values = dict(variables)
    for alias, canonical in ALIASES.items():
        if alias not in values and canonical in values:
            values[alias] = values[canonical]

    def sub(m: re.Match[str]) -> str:
        token = m.group(0)
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        name = m.group(1)
        if name not in values:
            where = f" in template {template_id!r}" if template_id else ""
            raise PromptTemplateError(f"unknown variable {{{name}}}{where}")
        return format_value(values[name])

    return _TOKEN.sub(sub, text)


def render_prompt(
    template_id: str,
    variables: Mapping[str, Any],
    *,
    prompt_library: Mapping[str, str] | None = None,
    model_name: str | None = None,
) -> str:
    """Resolve the template for (task library, model) and fill it. The cost planner uses
    this too, so its token estimates see the same text the phases send."""
    text = resolve_template(template_id, prompt_library, model_name)
    # every variable the template id allows is defined (empty when the phase has no value)
    values = dict(_EMPTY[template_id])
    values.update(variables)
    return render(text, values, template_id=template_id)


_EMPTY: dict[str, dict[str, str]] = {
    tid: {name: "" for name in names if name not in ALIASES} for tid, names in TEMPLATE_VARIABLES.items()
}
