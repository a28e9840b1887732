"""Coverage of the attribute grid: which target-attribute values (and pairs of values) the
datapoints actually exercise, per task and teacher."""

from __future__ import annotations

from itertools import combinations
from typing import Any

import pandas as pd

from coeval_analysis.loading.run_data import RunData

__all__ = ["attribute_coverage"]

_COLUMNS = ["task", "teacher", "attribute", "value", "n_datapoints"]


def attribute_coverage(data: RunData) -> tuple[dict[str, Any], pd.DataFrame]:
    """(per-task summary, table of datapoint counts per task, teacher, attribute, value).

    The grid is phase 1's target attributes (the values a teacher could have drawn); values
    seen in datapoints but not in the grid are listed as ``off_grid_values``.
    ``value_coverage`` is the share of grid values with at least one datapoint;
    ``pair_coverage`` the share of value pairs of two grid attributes that occur together
    in some datapoint.
    """
    dps = data.datapoints
    ok_dps = dps.index[~dps["failed"].to_numpy()] if len(dps) else dps.index
    attrs = data.attributes
    if len(attrs):
        attrs = attrs[attrs["datapoint"].isin(ok_dps)]
        teacher = dps["teacher"].astype(object).reindex(attrs["datapoint"].to_numpy()).to_numpy()
        attrs = pd.DataFrame(
            {
                "datapoint": attrs["datapoint"].to_numpy(),
                "task": attrs["task"].astype(object).to_numpy(),
                "teacher": teacher,
                "attribute": attrs["attribute"].astype(object).to_numpy(),
                "value": attrs["value"].astype(object).to_numpy(),
            }
        )
    counts = (
        attrs.groupby(["task", "teacher", "attribute", "value"], sort=True)
        .size()
        .reset_index(name="n_datapoints")
        if len(attrs)
        else pd.DataFrame(columns=_COLUMNS)
    )
    observed = {str(t) for t in attrs["task"].unique()} if len(attrs) else set()
    summary: dict[str, Any] = {}
    for task in sorted(set(data.target_attributes) | observed):
        grid = data.target_attributes.get(task, {})
        ta = attrs[attrs["task"] == task] if len(attrs) else attrs
        seen = (
            set(map(tuple, ta[["attribute", "value"]].drop_duplicates().to_numpy().tolist()))
            if len(ta)
            else set()
        )
        grid_pairs = [(a, v) for a, vs in grid.items() for v in vs]
        grid_set = set(grid_pairs)
        pair_total = pair_seen = 0
        if len(ta) and len(grid) >= 2:
            for a, b in combinations(sorted(grid), 2):
                pair_total += len(grid[a]) * len(grid[b])
                left = ta[(ta["attribute"] == a) & ta["value"].isin(grid[a])][["datapoint", "value"]]
                right = ta[(ta["attribute"] == b) & ta["value"].isin(grid[b])][["datapoint", "value"]]
                both = left.merge(right, on="datapoint")
                pair_seen += len(both[["value_x", "value_y"]].drop_duplicates())
        summary[task] = {
            "n_datapoints": int(ta["datapoint"].nunique()) if len(ta) else 0,
            "n_values": len(grid_pairs),
            "value_coverage": len(seen & grid_set) / len(grid_pairs) if grid_pairs else None,
            "pair_coverage": pair_seen / pair_total if pair_total else None,
            "uncovered": [f"{a}={v}" for a, v in grid_pairs if (a, v) not in seen][:50],
            "off_grid_values": sorted(f"{a}={v}" for a, v in seen - grid_set)[:50] if grid else [],
        }
    return summary, counts.reindex(columns=_COLUMNS)
