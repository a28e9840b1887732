"""CSV and Parquet tables of the scores, one file pair per table under ``tables/``.

Also ``tables/scores.parquet``: every usable score (response, judge, factor, value), the
input of all statistics, for users who want to recompute anything (Parquet only: it has
one row per score, millions for large runs).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from coeval_analysis.analysis import Analysis

__all__ = ["write_tables"]


def write_tables(analysis: Analysis, out_dir: Path) -> list[Path]:
    folder = Path(out_dir) / "tables"
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, table in analysis.tables.items():
        if table is None or table.empty:
            continue
        table.to_csv(folder / f"{name}.csv", index=False)
        table.to_parquet(folder / f"{name}.parquet", index=False)
        written += [folder / f"{name}.csv", folder / f"{name}.parquet"]
    units = _score_units(analysis)
    if len(units):
        units.to_parquet(folder / "scores.parquet", index=False)
        written.append(folder / "scores.parquet")
    return written


def _score_units(analysis: Analysis) -> pd.DataFrame:
    data = analysis.data
    u = data.units
    return pd.DataFrame(
        {
            "response_id": pd.Categorical.from_codes(
                u["response"].to_numpy(), categories=pd.Index(data.response_ids, dtype=object), validate=False
            ),
            "task": u["task"].cat.remove_unused_categories(),
            "teacher": u["teacher"].cat.remove_unused_categories(),
            "student": u["student"].cat.remove_unused_categories(),
            "judge": u["judge"].cat.remove_unused_categories(),
            "evaluator": u["evaluator"],
            "factor": u["factor"],
            "value": u["value"].to_numpy(np.float32),
        }
    )
