"""Prices per model and the ``interface: auto`` routing table.

The table ships as package data (``pricing.yaml``); a user file named by
``$COEVAL_PRICING_FILE`` is merged over it (see :func:`pricing_table`).
"""

from coeval_providers.pricing._table import (
    PRICING_ENV,
    AutoChoice,
    Price,
    PricingFileError,
    PricingTable,
    pricing_table,
    reset_pricing_table,
)

__all__ = [
    "PRICING_ENV",
    "AutoChoice",
    "Price",
    "PricingFileError",
    "PricingTable",
    "pricing_table",
    "reset_pricing_table",
]
