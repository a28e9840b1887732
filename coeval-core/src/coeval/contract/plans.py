"""What a phase expects to call before any call is made: the record a phase's ``plan(view)``
returns and ``coeval plan``, the cost estimate and ``coeval status`` add up. It is part of
the contract (a plugin's phase returns it), so it names nothing of the implementations."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

__all__ = ["PLAN_BASES", "PlannedCalls"]

#: How a phase's planned count is meant: every item is called ("full"), existing records
#: are skipped so it is at most this ("upper_bound"), or an earlier run's work is kept ("reused").
PLAN_BASES = ("full", "upper_bound", "reused")


def _total(counts: Mapping[Any, int]) -> int:
    return sum(int(n) for n in counts.values())


@attrs.frozen
class PlannedCalls:
    """The calls a phase expects to make under the current config, before any is made.

    ``coeval plan``, the cost estimate and ``run --dry-run`` add these up, so a phase
    (built-in or from a plugin) says once how much work it is. ``cells`` is the finest
    grain, ``(task, model) -> calls``, which the cost estimate prices; a phase that does
    not know it may leave it empty and give only the two totals.
    """

    phase: str
    calls_by_model: Mapping[str, int] = attrs.field(factory=dict)
    calls_by_task: Mapping[str, int] = attrs.field(factory=dict)
    basis: str = attrs.field(default="full", validator=attrs.validators.in_(PLAN_BASES))
    cells: Mapping[tuple[str, str], int] = attrs.field(factory=dict)
    notes: tuple[str, ...] = ()

    @classmethod
    def from_cells(
        cls, phase: str, cells: Mapping[tuple[str, str], int], *, basis: str = "full", notes: Iterable[str] = ()
    ) -> PlannedCalls:
        """Totals per model and per task summed from ``(task, model) -> calls``."""
        by_model: dict[str, int] = {}
        by_task: dict[str, int] = {}
        for (task, model), n in cells.items():
            by_model[model] = by_model.get(model, 0) + n
            by_task[task] = by_task.get(task, 0) + n
        return cls(phase, by_model, by_task, basis, dict(cells), tuple(notes))

    @property
    def total(self) -> int:
        """All calls of the phase (by task when given, else by model)."""
        return _total(self.calls_by_task) if self.calls_by_task else _total(self.calls_by_model)

    def cell_map(self) -> dict[tuple[str, str], int]:
        """``(task, model) -> calls``: the cells given, or, when the two totals agree, a split
        that keeps both (exact when one task or one model has all the calls; otherwise
        tasks are filled with models in order). Empty when the totals disagree."""
        if self.cells:
            return dict(self.cells)
        task_names = [t for t, n in self.calls_by_task.items() if n > 0]
        model_names = [m for m, n in self.calls_by_model.items() if n > 0]
        left_t = [int(self.calls_by_task[t]) for t in task_names]
        left_m = [int(self.calls_by_model[m]) for m in model_names]
        if sum(left_t) != sum(left_m):
            return {}
        cells: dict[tuple[str, str], int] = {}
        i = j = 0
        while i < len(left_t) and j < len(left_m):
            n = min(left_t[i], left_m[j])
            cells[(task_names[i], model_names[j])] = n
            left_t[i] -= n
            left_m[j] -= n
            i += left_t[i] == 0
            j += left_m[j] == 0
        return cells
