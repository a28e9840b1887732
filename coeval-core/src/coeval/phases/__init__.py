"""Pipeline phases (the five standard ones are registered by the core plugin)."""

from __future__ import annotations

from typing import Any


def standard_phases() -> list[Any]:
    return []
