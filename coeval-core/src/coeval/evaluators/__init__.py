"""Phase-5 evaluators registered by the core."""

from __future__ import annotations

from typing import Any


def standard_evaluators() -> dict[str, Any]:
    return {}
