"""Numbers as summary.json holds them: JSON has no NaN or infinity, so a value that is not
finite (or is missing) is written as null."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["finite_or_none"]


def finite_or_none(x: Any) -> float | None:
    """``x`` as a float, or None when it is missing or not finite."""
    if x is None:
        return None
    x = float(x)
    return x if np.isfinite(x) else None
