"""The interface names CoEval's own distributions ship, and which distribution ships each.

This is no table of interface facts: what an interface needs, whether it batches and
whether it makes calls are declared by the plugin that registers it (see
:meth:`coeval.contract.manager.Registries.interface_facts`). The names are kept here only so that
validation (V-06) accepts them when their distribution is not installed (``--dry-run`` and
``plan`` work anywhere) and a run names the distribution to install.
"""

from __future__ import annotations

SHIPPED_INTERFACES: dict[str, str] = {
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

def providing_distribution(interface: str) -> str | None:
    return SHIPPED_INTERFACES.get(interface)
