"""``summary.json``: every number of the analysis, machine-readable (schema in docs/analysis.md)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from coeval_analysis.analysis import Analysis

__all__ = ["SIGNIFICANT_DIGITS", "rounded", "to_jsonable", "write_summary"]

#: Scores are float32 (about 7 significant digits) and the bootstrap sums them in float32,
#: so digits past the 6th are representation noise (0.5500000149011612 for 0.55).
SIGNIFICANT_DIGITS = 6


def rounded(value: float) -> float | None:
    """``value`` to :data:`SIGNIFICANT_DIGITS` significant digits; None when not finite."""
    if not math.isfinite(value):
        return None
    return float(f"{value:.{SIGNIFICANT_DIGITS}g}")


def to_jsonable(obj: Any) -> Any:
    """Plain JSON values: numpy scalars to Python, floats rounded to the digits they
    carry (:data:`SIGNIFICANT_DIGITS`), NaN and infinities to null."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [to_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, bool | np.bool_):
        return bool(obj)
    if isinstance(obj, int | np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        return rounded(float(obj))
    return obj


def write_summary(analysis: Analysis, out_dir: Path) -> list[Path]:
    path = Path(out_dir) / "summary.json"
    path.write_text(
        json.dumps(to_jsonable(analysis.summary), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return [path]
