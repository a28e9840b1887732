"""CSV and Parquet tables of the scores, one file pair per table under ``tables/``
(written by Arrow's C++ writers: a few hundred thousand rows take well under a second).

Also ``tables/scores.parquet``: every usable score (response, judge, factor, value), the
input of all statistics, for users who want to recompute anything (Parquet only: it has
one row per score, millions for large runs).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from coeval_analysis.output.csv_safety import neutralise_arrow

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
        arrow = pa.Table.from_pandas(table, preserve_index=False)
        pa_csv.write_csv(neutralise_arrow(arrow), folder / f"{name}.csv")  # no spreadsheet formulas
        pq.write_table(arrow, folder / f"{name}.parquet")
        written += [folder / f"{name}.csv", folder / f"{name}.parquet"]
    units = _score_units(analysis)
    if len(units):
        pq.write_table(pa.Table.from_pandas(units, preserve_index=False), folder / "scores.parquet")
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
