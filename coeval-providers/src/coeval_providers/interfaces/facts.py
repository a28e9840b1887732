"""What each provider interface of coeval-providers declares when it registers (see
:class:`coeval.InterfaceFacts`): where its key comes from, which sampling keys it sends
and how fast it typically writes. The core keeps no table of interfaces; it asks the
registries for these."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["KEY_ENV", "KEY_FIELDS", "SAMPLING_KEYS", "TOKENS_PER_S"]

#: Environment variables each provider's SDK conventionally reads, in order of preference.
KEY_ENV: Mapping[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "azure_openai": ("AZURE_OPENAI_API_KEY",),
    "azure_ai": ("AZURE_AI_API_KEY", "GITHUB_TOKEN"),
    "bedrock": ("AWS_BEARER_TOKEN_BEDROCK",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "deepinfra": ("DEEPINFRA_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
    "cohere": ("COHERE_API_KEY", "CO_API_KEY"),
    "huggingface_api": ("HF_TOKEN", "HUGGINGFACE_API_KEY"),
    "vllm": ("VLLM_API_KEY",),
}

#: Structured key-file entries: field -> environment variable fallback.
KEY_FIELDS: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "azure_openai": {"endpoint": ("AZURE_OPENAI_ENDPOINT",), "api_version": ("OPENAI_API_VERSION",)},
    "bedrock": {
        "access_key_id": ("AWS_ACCESS_KEY_ID",),
        "secret_access_key": ("AWS_SECRET_ACCESS_KEY",),
        "session_token": ("AWS_SESSION_TOKEN",),
        "region": ("AWS_REGION", "AWS_DEFAULT_REGION"),
    },
    "vertex": {
        "project": ("GOOGLE_CLOUD_PROJECT",),
        "location": ("GOOGLE_CLOUD_LOCATION",),
        "service_account_key": ("GOOGLE_APPLICATION_CREDENTIALS",),
    },
    "ollama": {"base_url": ("OLLAMA_HOST",)},
    "vllm": {"base_url": ("VLLM_BASE_URL",)},
    "azure_ai": {"endpoint": ("AZURE_AI_ENDPOINT",)},
}

_CHAT_COMPLETIONS = frozenset(
    {
        "temperature", "top_p", "max_tokens", "max_new_tokens", "max_output_tokens", "max_completion_tokens",
        "seed", "stop", "frequency_penalty", "presence_penalty", "logit_bias", "user",
    }
)  # fmt: skip
_OPENAI = _CHAT_COMPLETIONS | {"reasoning_effort", "service_tier", "verbosity"}
_SELF_HOSTED = _CHAT_COMPLETIONS | {"top_k", "min_p", "repetition_penalty", "repeat_penalty"}

#: interface -> sampling keys it sends (names mapped per server, see docs/local-models.md);
#: the others do not declare theirs, and their ``parameters`` keys are not checked (V-45)
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

#: Typical generation speed (output tokens per second), for the plan's time estimates.
TOKENS_PER_S: Mapping[str, float] = {
    "openai": 80,
    "azure_openai": 80,
    "anthropic": 60,
    "gemini": 120,
    "vertex": 120,
    "bedrock": 60,
    "mistral": 70,
    "groq": 400,
    "cerebras": 1000,
    "deepseek": 40,
    "deepinfra": 60,
    "openrouter": 60,
    "cohere": 60,
    "huggingface_api": 50,
    "azure_ai": 60,
    "ollama": 30,
    "vllm": 60,
}
