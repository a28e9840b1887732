"""Constrained decoding for JSON phases on the ``huggingface`` interface.

A small local model rarely writes valid JSON on its own, so a call whose request carries a
JSON schema (teacher and judge phases) is decoded under a logits mask that only allows
tokens keeping the output a valid prefix of a document matching the schema. The mask comes
from ``lm-format-enforcer`` (pure Python, CPU, offline; its own transformers integration
does not import under transformers 5, so the tokenizer data is built here). xgrammar was
the other candidate; it pulls triton (hundreds of MB, GPU-only) into a CPU install.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["bounded_strings", "json_mask_processor"]

_TOKENIZER_DATA: dict[int, Any] = {}


def _tokenizer_data(tokenizer: Any) -> Any:
    """The enforcer's view of the vocabulary (built once per tokenizer: it decodes every token)."""
    cached = _TOKENIZER_DATA.get(id(tokenizer))
    if cached is not None:
        return cached
    from lmformatenforcer import TokenEnforcerTokenizerData

    size = len(tokenizer)
    zero = tokenizer.encode("0", add_special_tokens=False)[-1]
    special = set(tokenizer.all_special_ids)
    regular = []
    for idx in range(size):
        if idx in special:
            continue
        after_zero = tokenizer.decode([zero, idx])[1:]
        alone = tokenizer.decode([idx])
        regular.append((idx, after_zero, len(after_zero) > len(alone)))
    data = TokenEnforcerTokenizerData(regular, lambda ids: tokenizer.decode(ids), tokenizer.eos_token_id, False, size)
    _TOKENIZER_DATA[id(tokenizer)] = data
    return data


def bounded_strings(schema: Any, max_chars: int) -> Any:
    """``schema`` with a ``maxLength`` on every free string, so the document can close
    within the call's token budget (a small model otherwise may never end a string), and
    every property required. Whatever matches the result matches ``schema``."""
    if isinstance(schema, list):
        return [bounded_strings(s, max_chars) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out = {k: bounded_strings(v, max_chars) for k, v in schema.items()}
    if out.get("type") == "string" and "enum" not in out and "const" not in out:
        out["maxLength"] = min(int(out.get("maxLength", max_chars)), max_chars)
    if out.get("type") == "object" and isinstance(out.get("properties"), Mapping):
        # every property written: the parser can leave a trailing comma after optional ones
        out["required"] = list(out["properties"])
    return out


class _JsonMask:
    """A transformers logits processor: row ``i`` may only continue its schema's JSON."""

    def __init__(self, tokenizer: Any, schemas: Sequence[Mapping[str, Any] | None], prompt_width: int,
                 max_tokens: int) -> None:
        from lmformatenforcer import CharacterLevelParserConfig, JsonSchemaParser, TokenEnforcer

        data = _tokenizer_data(tokenizer)
        cap = max(8, max_tokens // 8)
        config = CharacterLevelParserConfig(max_consecutive_whitespaces=1)
        self.enforcers = [TokenEnforcer(data, JsonSchemaParser(bounded_strings(dict(s), cap), config=config))
                          if s is not None else None for s in schemas]
        self.prompt_width = prompt_width
        #: whitespace-only tokens and tokens with control characters: never chosen while
        #: anything else is allowed (a small model would spend its budget on indentation, and
        #: the parser lets raw control characters into strings, which JSON forbids)
        self.blank = {idx for idx, text, _ in data.regular_tokens
                      if (text and not text.strip()) or any(ord(ch) < 0x20 for ch in text)}

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        for row, enforcer in enumerate(self.enforcers):
            if enforcer is None:
                continue
            allowed = list(enforcer.get_allowed_tokens(input_ids[row, self.prompt_width:].tolist()).allowed_tokens)
            useful = [t for t in allowed if t not in self.blank]
            mask = torch.full_like(scores[row], float("-inf"))
            mask[useful or allowed] = 0.0
            scores[row] = scores[row] + mask
        return scores


def json_mask_processor(tokenizer: Any, schemas: Sequence[Mapping[str, Any] | None], prompt_width: int,
                        max_tokens: int) -> Any | None:
    """A logits processor for a batch, or None when no call of the batch asks for JSON.
    Free strings are capped at ``max_tokens // 8`` characters (at least 8)."""
    if all(s is None for s in schemas):
        return None
    return _JsonMask(tokenizer, schemas, prompt_width, max_tokens)
