"""Prompt templates: the canonical wording, overrides, safe rendering and output schemas."""

from coeval.prompts.render import (
    PromptTemplateError,
    format_value,
    render,
    render_prompt,
    resolve_template,
    template_fields,
    unknown_variables,
    validate_prompt_library,
)
from coeval.prompts.templates import ALIASES, DEFAULT_TEMPLATES, TEMPLATE_IDS, TEMPLATE_VARIABLES

__all__ = [
    "ALIASES",
    "DEFAULT_TEMPLATES",
    "TEMPLATE_IDS",
    "TEMPLATE_VARIABLES",
    "PromptTemplateError",
    "format_value",
    "render",
    "render_prompt",
    "resolve_template",
    "template_fields",
    "unknown_variables",
    "validate_prompt_library",
]
