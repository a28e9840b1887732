"""Which ``parameters`` keys an interface understands (rules V-45, V-46): CoEval's own
settings and the sampling keys the interface declared when it registered
(``sampling_keys`` of :class:`coeval.InterfaceFacts`).

A misspelt sampling key used to be dropped without a word. Now a key that is neither a
CoEval setting nor a sampling key the interface declares is a validation error with a
did-you-mean; anything server-specific goes under ``extra_body``, which is sent as is.
Timeouts must be positive and at most a day.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from coeval.config.interface_facts import InterfaceFacts

__all__ = ["COEVAL_SETTINGS", "TIMEOUT_KEYS", "bad_timeout", "known_keys"]

#: Keys that configure the connection or CoEval itself (every interface that declares its sampling keys).
COEVAL_SETTINGS = frozenset(
    {
        "model", "base_url", "endpoint", "timeout", "connect_timeout", "connect_wait_s", "call_timeout",
        "api_version", "deployment", "concurrency", "max_concurrency", "region", "project", "location",
        "system_prompt", "system", "structured_output", "extra_body", "headers", "batch_bucket", "batch_s3_uri",
        "batch_gcs_uri", "batch_role_arn", "batch_model", "batch_deployment", "price_as", "server", "self_hosted",
    }
)  # fmt: skip

TIMEOUT_KEYS = ("timeout", "connect_timeout", "connect_wait_s", "call_timeout")
_DAY_S = 86_400.0


def known_keys(facts: InterfaceFacts | None) -> frozenset[str] | None:
    """Every key ``parameters`` may hold for the interface of ``facts`` (None: its sampling
    keys are not declared, or it is not registered: not checked)."""
    sampling = facts.sampling_keys if facts is not None else None
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
