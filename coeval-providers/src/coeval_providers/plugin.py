"""Hook implementations of coeval-providers (registered through the ``coeval`` entry point).

Registers the 17 provider interfaces, the batch runners of the seven providers with a batch
API, ``interface: auto`` routing and model prices. Nothing heavy is imported here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from coeval.contract.hookspecs import hookimpl

if TYPE_CHECKING:
    from coeval import ModelConfig, RegisterBatchRunner, RegisterInterface

log = logging.getLogger("coeval.providers")

#: interface name -> "module:Class" of its batch runner
BATCH_RUNNERS: dict[str, str] = {
    "openai": "coeval_providers.batch.openai:OpenAIBatchRunner",
    "azure_openai": "coeval_providers.batch.openai:AzureOpenAIBatchRunner",
    "anthropic": "coeval_providers.batch.anthropic:AnthropicBatchRunner",
    "gemini": "coeval_providers.batch.gemini:GeminiBatchRunner",
    "vertex": "coeval_providers.batch.gemini:VertexBatchRunner",
    "bedrock": "coeval_providers.batch.bedrock:BedrockBatchRunner",
    "mistral": "coeval_providers.batch.mistral:MistralBatchRunner",
}


@hookimpl
def register_interfaces(register: RegisterInterface) -> None:
    from coeval_providers.interfaces import INTERFACES, lazy_factory
    from coeval_providers.interfaces.facts import KEY_ENV, KEY_FIELDS, SAMPLING_KEYS, TOKENS_PER_S

    for name, path in INTERFACES.items():
        register(name, lazy_factory(path), key_env=KEY_ENV.get(name, ()), key_fields=KEY_FIELDS.get(name),
                 sampling_keys=SAMPLING_KEYS.get(name), tokens_per_s=TOKENS_PER_S.get(name))


@hookimpl
def register_batch_runners(register: RegisterBatchRunner) -> None:
    from coeval_providers.interfaces import lazy_factory

    for name, path in BATCH_RUNNERS.items():
        register(name, lazy_factory(path))


@hookimpl
def resolve_auto_interface(model: ModelConfig, has_credentials: Callable[[str], bool]) -> str | None:
    """The cheapest provider with credentials that serves ``parameters.model``."""
    from coeval_providers.pricing import pricing_table

    wanted = str(model.parameters.get("model") or "")
    if not wanted:
        return None
    choice = pricing_table().resolve_auto(wanted, has_credentials)
    name = model.name
    if choice is None:
        log.info("interface auto: no provider with credentials serves %r (model %s)", wanted, name)
        return None
    price = f"${choice.price.input:g}/${choice.price.output:g} per 1M tokens" if choice.price else "price unknown"
    log.info("interface auto: model %s (%s) -> %s as %r, the cheapest with credentials among %s (%s)",
             name, wanted, choice.interface, choice.model_id, ", ".join(choice.considered), price)
    return choice.interface


@hookimpl
def model_price(interface: str, model_id: str) -> dict[str, float] | None:
    from coeval_providers.pricing import pricing_table

    price = pricing_table().price(interface, model_id)
    return price.as_dict() if price is not None else None
