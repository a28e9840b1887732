"""Coverage of the attribute grid: which target-attribute values (and pairs of values) the
datapoints actually exercise, per task and teacher."""

from __future__ import annotations

from itertools import combinations
from typing import Any

import pandas as pd

from coeval_analysis.data import RunData

__all__ = ["attribute_coverage"]


def attribute_coverage(data: RunData) -> tuple[dict[str, Any], pd.DataFrame]:
    """(per-task summary, table of datapoint counts per task, teacher, attribute, value).

    The grid is phase 1's target attributes (the values a teacher could have drawn); values
    seen in datapoints but not in the grid are counted as well. ``value_coverage`` is the
    share of grid values with at least one datapoint; ``pair_coverage`` the share of value
    pairs of two attributes that occur together in some datapoint.
    """
    attrs = data.attributes
    dps = data.datapoints[~data.datapoints["failed"]] if len(data.datapoints) else data.datapoints
    if len(attrs):
        attrs = attrs[attrs["datapoint"].isin(dps.index)]
    teacher_of = dps["teacher"].astype(str) if len(dps) else pd.Series(dtype=str)
    rows = []
    summary: dict[str, Any] = {}
    observed_tasks = {str(t) for t in attrs["task"].unique()} if len(attrs) else set()
    tasks = sorted(set(data.target_attributes) | observed_tasks)
    for task in tasks:
        grid = data.target_attributes.get(task, {})
        ta = attrs[attrs["task"].astype(str) == task] if len(attrs) else attrs
        seen = ta.assign(teacher=teacher_of.reindex(ta["datapoint"]).to_numpy()) if len(ta) else ta
        counts = (
            seen.groupby(["teacher", "attribute", "value"], observed=True)
            .size()
            .reset_index(name="n_datapoints")
            if len(seen)
            else pd.DataFrame(columns=["teacher", "attribute", "value", "n_datapoints"])
        )
        all_values: dict[str, set[str]] = {a: set(v) for a, v in grid.items()}
        for a, v in zip(ta["attribute"].astype(str), ta["value"].astype(str), strict=True):
            all_values.setdefault(a, set()).add(v)
        per_value = (
            ta.groupby(["attribute", "value"], observed=True).size() if len(ta) else pd.Series(dtype=int)
        )
        covered = {(str(a), str(v)) for (a, v), n in per_value.items() if n > 0}
        grid_pairs = [(a, v) for a, vs in grid.items() for v in vs]
        uncovered = [f"{a}={v}" for a, v in grid_pairs if (a, v) not in covered]
        n_grid = len(grid_pairs)
        # pairs of attribute values seen together
        pair_total = 0
        pair_seen = 0
        if len(ta) and len(grid) >= 2:
            wide = ta.pivot_table(
                index="datapoint", columns="attribute", values="value", aggfunc="first", observed=True
            )
            for a, b in combinations(sorted(grid), 2):
                pair_total += len(grid[a]) * len(grid[b])
                if a in wide.columns and b in wide.columns:
                    both = wide[[a, b]].dropna().astype(str)
                    ok = both[a].isin(grid[a]) & both[b].isin(grid[b])
                    pair_seen += len(both[ok].drop_duplicates())
        summary[task] = {
            "n_datapoints": int(ta["datapoint"].nunique()) if len(ta) else 0,
            "n_values": n_grid,
            "value_coverage": (len(covered & set(grid_pairs)) / n_grid) if n_grid else None,
            "pair_coverage": (pair_seen / pair_total) if pair_total else None,
            "uncovered": uncovered[:50],
            "off_grid_values": sorted(f"{a}={v}" for a, v in covered - set(grid_pairs))[:50] if grid else [],
        }
        for rec in counts.itertuples(index=False):
            rows.append(
                {
                    "task": task,
                    "teacher": rec.teacher,
                    "attribute": rec.attribute,
                    "value": rec.value,
                    "n_datapoints": int(rec.n_datapoints),
                }
            )
    return summary, pd.DataFrame(rows, columns=["task", "teacher", "attribute", "value", "n_datapoints"])
