"""Phase-5 evaluators registered by the core."""

from __future__ import annotations

from typing import Any

from coeval.evaluators.base import Evaluator

__all__ = ["Evaluator", "standard_evaluators"]


def standard_evaluators() -> dict[str, Any]:
    return {}
