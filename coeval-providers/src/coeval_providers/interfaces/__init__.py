"""The provider interfaces of coeval-providers, by name.

Classes are imported only when a model uses them (the registry holds import paths), and
SDKs only when a client is first built, so ``coeval --help`` and plugin discovery stay fast.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["INTERFACES", "interface_class", "lazy_factory"]

#: interface name -> "module:Class"
INTERFACES: dict[str, str] = {
    "openai": "coeval_providers.interfaces.openai_compat:OpenAIInterface",
    "anthropic": "coeval_providers.interfaces.anthropic:AnthropicInterface",
    "gemini": "coeval_providers.interfaces.gemini:GeminiInterface",
    "azure_openai": "coeval_providers.interfaces.azure_openai:AzureOpenAIInterface",
    "bedrock": "coeval_providers.interfaces.bedrock:BedrockInterface",
    "vertex": "coeval_providers.interfaces.gemini:VertexInterface",
    "mistral": "coeval_providers.interfaces.openai_compat:MistralInterface",
    "openrouter": "coeval_providers.interfaces.openai_compat:OpenRouterInterface",
    "groq": "coeval_providers.interfaces.openai_compat:GroqInterface",
    "deepseek": "coeval_providers.interfaces.openai_compat:DeepSeekInterface",
    "deepinfra": "coeval_providers.interfaces.openai_compat:DeepInfraInterface",
    "cerebras": "coeval_providers.interfaces.openai_compat:CerebrasInterface",
    "cohere": "coeval_providers.interfaces.openai_compat:CohereInterface",
    "huggingface_api": "coeval_providers.interfaces.openai_compat:HuggingFaceAPIInterface",
    "ollama": "coeval_providers.interfaces.openai_compat:OllamaInterface",
    "azure_ai": "coeval_providers.interfaces.openai_compat:AzureAIInterface",
    "vllm": "coeval_providers.interfaces.openai_compat:VLLMInterface",
}


def _load(path: str) -> Any:
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def interface_class(name: str) -> Any:
    return _load(INTERFACES[name])


def lazy_factory(path: str) -> Any:
    """A ``factory(model, credentials)`` that imports ``path`` on first call."""

    def factory(model: Any, credentials: Any = None) -> Any:
        return _load(path)(model, credentials)

    factory.__qualname__ = factory.__name__ = path.rpartition(":")[2]
    factory.target = path  # type: ignore[attr-defined]
    return factory
