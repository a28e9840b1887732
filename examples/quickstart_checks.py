"""The quick start's deterministic check (``evaluator: python`` in examples/quickstart.yaml)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def names_the_capital(answer: str, datapoint: Mapping[str, Any]) -> bool:
    """True when the answer names the row's capital (its ``answer`` column, the reference)."""
    return str(datapoint.get("reference_response") or "").strip().lower() in answer.lower()
