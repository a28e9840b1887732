"""Prices per model, from the ``model_price`` hook (coeval-providers' pricing table)."""

from __future__ import annotations

from typing import Any

import attrs

from coeval.config.model import ModelConfig
from coeval.plugins.manager import get_plugin_manager
from coeval.shipped_interfaces import LOCAL_INTERFACES

__all__ = ["LOCAL_INTERFACES", "Price", "price_for"]



@attrs.frozen
class Price:
    """US dollars per million tokens (plus ``per_call`` dollars a call, which only the mock
    charges); ``batch_discount`` multiplies the price in batch mode."""

    input: float
    output: float
    batch_discount: float = 1.0
    source: str = "pricing table"
    per_call: float = 0.0

    def cost(self, input_tokens: float, output_tokens: float, *, batch: bool = False, calls: float = 0.0) -> float:
        usd = (input_tokens * self.input + output_tokens * self.output) / 1_000_000 + calls * self.per_call
        return usd * (self.batch_discount if batch else 1.0)

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def price_for(model: ModelConfig) -> Price | None:
    """The model's price, or None when no installed plugin knows it.

    Local interfaces cost nothing per token; the mock's ``cost_per_1k_tokens_usd`` and
    ``cost_per_call_usd`` parameters price it like a provider (for budget tests and demos).
    """
    model_id = str(model.parameters.get("model") or "")
    if model.interface == "mock":
        per_1k = float(model.parameters.get("cost_per_1k_tokens_usd") or 0.0)
        per_call = float(model.parameters.get("cost_per_call_usd") or 0.0)
        return Price(per_1k * 1000, per_1k * 1000, 1.0, source="mock parameters", per_call=per_call)
    found = get_plugin_manager().hook.model_price(interface=model.interface, model_id=model_id)
    if isinstance(found, dict) and "input" in found and "output" in found:
        return Price(
            float(found["input"]),
            float(found["output"]),
            float(found.get("batch_discount", 1.0) or 1.0),
        )
    if model.interface in LOCAL_INTERFACES:
        return Price(0.0, 0.0, 1.0, source="local")
    return None
