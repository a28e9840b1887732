"""Model interfaces: the contract, the built-in ``mock`` and the list of known names."""

from coeval.interfaces.base import (
    FatalModelError,
    GenerateRequest,
    GenerateResult,
    Interface,
    MalformedResponseError,
    ModelError,
    RateLimitError,
    TransientModelError,
    Usage,
)
from coeval.shipped_interfaces import SHIPPED_INTERFACES, providing_distribution

__all__ = [
    "SHIPPED_INTERFACES",
    "FatalModelError",
    "GenerateRequest",
    "GenerateResult",
    "Interface",
    "MalformedResponseError",
    "ModelError",
    "RateLimitError",
    "TransientModelError",
    "Usage",
    "providing_distribution",
]
