"""Model families, and which judgments are conflicts of interest.

A judge grading its own answer, or an answer of a student from its own family (same
vendor lineage), is *conflicted*: related models share training data and style, and
related judges favour their relatives. The family of a model is ``models[].family`` from
the run's config when given, else inferred from the model id (``parameters.model``, or the
model's name) by the prefixes in :data:`FAMILY_PREFIXES`; a model matching none is its own
family.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["FAMILY_PREFIXES", "infer_family", "known_family", "model_families"]

#: (prefix of the lower-cased model id, family); the first match wins
FAMILY_PREFIXES: tuple[tuple[str, str], ...] = (
    ("gpt", "openai"),
    ("chatgpt", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("text-davinci", "openai"),
    ("claude", "anthropic"),
    ("gemini", "google"),
    ("gemma", "google"),
    ("llama", "meta"),
    ("meta-llama", "meta"),
    ("qwen", "qwen"),
    ("mistral", "mistral"),
    ("mixtral", "mistral"),
    ("codestral", "mistral"),
    ("smollm", "huggingface"),
    ("deepseek", "deepseek"),
    ("command", "cohere"),
    ("phi", "microsoft"),
)


def _last_segment(model_id: str) -> str:
    return model_id.strip().rsplit("/", 1)[-1].lower()


def known_family(model_id: str) -> str | None:
    """The family :data:`FAMILY_PREFIXES` gives the last path segment of a model id
    (``Qwen/Qwen2.5-7B`` -> ``qwen2.5-7b``; Bedrock's ``anthropic.claude-3`` also as
    ``claude-3``; Ollama's ``llama3:8b``), or None."""
    last = _last_segment(model_id)
    for text in (last, last.split(".", 1)[-1], last.split(":", 1)[0]):
        for prefix, family in FAMILY_PREFIXES:
            if text.startswith(prefix):
                return family
    return None


def infer_family(model_id: str) -> str:
    """:func:`known_family`, else the lower-cased last segment of the id itself."""
    return known_family(model_id) or _last_segment(model_id)


def model_families(config: Mapping[str, Any], names: Sequence[str]) -> dict[str, str]:
    """Family of each of ``names``: ``models[].family`` when the config gives it, else
    inferred from ``parameters.model`` (or the name when the config does not list it)."""
    by_name: dict[str, Mapping[str, Any]] = {}
    for m in config.get("models", []) or []:
        if isinstance(m, Mapping) and isinstance(m.get("name"), str):
            by_name[m["name"]] = m
    out: dict[str, str] = {}
    for name in names:
        entry = by_name.get(name, {})
        family = entry.get("family")
        if isinstance(family, str) and family:
            out[name] = family
            continue
        params = entry.get("parameters")
        model_id = params.get("model") if isinstance(params, Mapping) else None
        from_id = known_family(model_id) if isinstance(model_id, str) and model_id else None
        # an unknown model id (a local path, a benchmark name) says less than the name
        out[name] = from_id or infer_family(name)
    return out
