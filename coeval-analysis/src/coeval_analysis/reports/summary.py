"""``summary.json``: every number of the analysis, machine-readable (schema in docs/analysis.md)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from coeval_analysis.analysis import Analysis

__all__ = ["to_jsonable", "write_summary"]


def to_jsonable(obj: Any) -> Any:
    """Plain JSON values: numpy scalars to Python, NaN and infinities to null."""
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
        f = float(obj)
        return f if math.isfinite(f) else None
    return obj


def write_summary(analysis: Analysis, out_dir: Path) -> list[Path]:
    path = Path(out_dir) / "summary.json"
    path.write_text(
        json.dumps(to_jsonable(analysis.summary), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return [path]
