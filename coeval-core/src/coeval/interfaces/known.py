"""Every interface name a config may use, and the distribution that provides it.

Validation (V-06) accepts these even when the providing distribution is not installed, so
that ``--dry-run`` and ``plan`` work anywhere; only running such a model fails, naming the
distribution to install.
"""

from __future__ import annotations

KNOWN_INTERFACES: dict[str, str] = {
    # the seed documentation's 18 identifiers
    "openai": "coeval-providers",
    "anthropic": "coeval-providers",
    "gemini": "coeval-providers",
    "azure_openai": "coeval-providers",
    "azure_ai": "coeval-providers",
    "bedrock": "coeval-providers",
    "vertex": "coeval-providers",
    "openrouter": "coeval-providers",
    "groq": "coeval-providers",
    "deepseek": "coeval-providers",
    "mistral": "coeval-providers",
    "deepinfra": "coeval-providers",
    "cerebras": "coeval-providers",
    "cohere": "coeval-providers",
    "huggingface_api": "coeval-providers",
    "ollama": "coeval-providers",
    "huggingface": "coeval-hf",
    "benchmark": "coeval-benchmarks",
    # ours
    "vllm": "coeval-providers",
    "llamacpp": "coeval-hf",
    "mock": "coeval-core",
}

#: Resolved at load time to a concrete interface (coeval-providers' routing table).
AUTO_INTERFACE = "auto"

#: Interfaces whose provider has a batch API (V-13).
BATCHABLE_INTERFACES: frozenset[str] = frozenset(
    {"openai", "anthropic", "azure_openai", "gemini", "bedrock", "vertex", "mistral"}
)

#: Interfaces that need no ``parameters.model``.
MODEL_OPTIONAL_INTERFACES: frozenset[str] = frozenset({"mock", "benchmark", "llamacpp"})


def providing_distribution(interface: str) -> str | None:
    return KNOWN_INTERFACES.get(interface)
