"""``coeval status``'s expected counts while an earlier record phase is still short.

A phase's survey expects what the phases before it hold so far (answers to the datapoints
written, judgments of the answers given), so during a run its "expected" grows (114, then
180). Until every earlier record phase is complete, each model's expected count is
therefore at least the plan's (:func:`coeval.planning.plan_experiment`, the full config's
totals); afterwards the survey is exact (it leaves out items whose inputs finally failed).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from coeval.config.model import Config
from coeval.phase_ids import RECORD_PHASES as _RECORD_PHASES
from coeval.planning import plan_experiment

if TYPE_CHECKING:
    from coeval.plugins.manager import Registries

__all__ = ["RECORD_PHASES", "with_planned_totals"]

RECORD_PHASES = _RECORD_PHASES


def _recount(counts: dict[str, int], expected: int) -> None:
    counts["expected"] = expected
    counts["missing"] = max(0, expected - counts["ok"] - counts["failed"])


def with_planned_totals(phases: Sequence[dict[str, Any]], config: Config, registries: Registries) -> None:
    """Raise the expected counts of record phases that follow an incomplete one to the plan's."""
    planned: Counter[tuple[str, str]] = Counter()
    short = False
    for entry in phases:
        name = entry["phase"]
        if name not in RECORD_PHASES or "total" not in entry:
            continue
        if short:
            if not planned:
                for (_task, phase, model), n in plan_experiment(config, registries=registries).cells.items():
                    planned[(phase, model)] += n
            groups = entry.get("groups") or {}
            for model, counts in groups.items():
                _recount(counts, max(counts["expected"], planned[(name, model)]))
            total = entry["total"]
            _recount(total, max(total["expected"], sum(c["expected"] for c in groups.values())))
        short = short or not entry.get("complete", True)
