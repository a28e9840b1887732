"""Which ``parameters`` keys each OpenAI-compatible interface understands (rules V-45, V-46).

A misspelt sampling key used to be dropped without a word. Now a key that is neither a
CoEval setting nor a sampling key the interface declares is a validation error with a
did-you-mean; anything server-specific goes under ``extra_body``, which is sent as is.
Timeouts must be positive and at most a day.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["COEVAL_SETTINGS", "SAMPLING_KEYS", "TIMEOUT_KEYS", "bad_timeout", "known_keys"]

#: Keys that configure the connection or CoEval itself (every interface of the table).
COEVAL_SETTINGS = frozenset(
    {
        "model", "base_url", "endpoint", "timeout", "connect_timeout", "connect_wait_s", "call_timeout",
        "api_version", "deployment", "concurrency", "max_concurrency", "region", "project", "location",
        "system_prompt", "system", "structured_output", "extra_body", "headers", "batch_bucket", "batch_s3_uri",
        "batch_gcs_uri", "batch_role_arn", "batch_model", "batch_deployment", "price_as", "server", "self_hosted",
    }
)  # fmt: skip

_CHAT_COMPLETIONS = frozenset(
    {
        "temperature", "top_p", "max_tokens", "max_new_tokens", "max_output_tokens", "max_completion_tokens",
        "seed", "stop", "frequency_penalty", "presence_penalty", "logit_bias", "user",
    }
)  # fmt: skip
_OPENAI = _CHAT_COMPLETIONS | {"reasoning_effort", "service_tier", "verbosity"}
_SELF_HOSTED = _CHAT_COMPLETIONS | {"top_k", "min_p", "repetition_penalty", "repeat_penalty"}

#: interface -> sampling keys it sends (names mapped per server, see docs/local-models.md)
SAMPLING_KEYS: Mapping[str, frozenset[str]] = {
    "openai": _OPENAI,
    "azure_openai": _OPENAI,
    "vllm": _SELF_HOSTED,
    "ollama": _SELF_HOSTED,
    "openrouter": _CHAT_COMPLETIONS | {"top_k", "min_p", "repetition_penalty"},
    "deepinfra": _CHAT_COMPLETIONS | {"top_k", "min_p", "repetition_penalty"},
    "groq": _CHAT_COMPLETIONS | {"reasoning_effort"},
    "deepseek": _CHAT_COMPLETIONS,
    "cerebras": _CHAT_COMPLETIONS,
    "mistral": _CHAT_COMPLETIONS,
}

TIMEOUT_KEYS = ("timeout", "connect_timeout", "connect_wait_s", "call_timeout")
_DAY_S = 86_400.0


def known_keys(interface: str) -> frozenset[str] | None:
    """Every key ``parameters`` may hold for ``interface`` (None: not declared, not checked)."""
    sampling = SAMPLING_KEYS.get(interface)
    return None if sampling is None else COEVAL_SETTINGS | sampling


def bad_timeout(value: Any) -> str | None:
    """Why a timeout value is nonsense, or None when it is fine."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "must be a number of seconds"
    if value <= 0:
        return "must be more than 0 seconds"
    if value > _DAY_S:
        return "must be at most 86400 seconds (24 h)"
    return None
