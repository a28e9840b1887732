"""The interface names CoEval's own distributions ship, and which distribution ships each.

This is no table of interface facts: what an interface needs, whether it batches and
whether it makes calls are declared by the plugin that registers it (see
:meth:`coeval.plugins.manager.Registries.interface_facts`). The names are kept here only so that
validation (V-06) accepts them when their distribution is not installed (``--dry-run`` and
``plan`` work anywhere) and a run names the distribution to install. It sits directly in
``coeval/`` and imports nothing, so the config's validation and key store, below the
interfaces, read it too.
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

#: The interface ``coeval ingest`` gives the teacher of a published benchmark's datapoints
#: (coeval-benchmarks registers it; ingested runs name it without that distribution).
BENCHMARK_INTERFACE = "benchmark"
#: The field of a ``meta.json`` ``ingest_log`` entry naming the benchmark ingested
#: (coeval-benchmarks writes the entries; ``coeval status`` reads them without it).
INGEST_BENCHMARK_FIELD = "benchmark"
#: What the wizard offers first.
DEFAULT_INTERFACE = "openai"

# What the plan, ``keys`` and ``models`` need to know of shipped interfaces whose
# distribution may be missing (``plan`` prices a config anywhere):

#: Run on your own hardware, a server you run, or replay data: no per-token charge, no API key.
LOCAL_INTERFACES = frozenset({"mock", "huggingface", "llamacpp", "ollama", "vllm", BENCHMARK_INTERFACE})
#: Need no entry in the key file at all.
KEYLESS_INTERFACES = frozenset({"mock", BENCHMARK_INTERFACE, "llamacpp"})
#: Have no server to list models from (``coeval models`` skips them).
IN_PROCESS_INTERFACES = frozenset({"mock", BENCHMARK_INTERFACE, "huggingface", "llamacpp"})
#: Servers you run, keyless: the environment variable naming their address.
SERVER_ADDRESS_ENV = {"ollama": "OLLAMA_HOST", "vllm": "VLLM_BASE_URL"}

def providing_distribution(interface: str) -> str | None:
    return SHIPPED_INTERFACES.get(interface)
