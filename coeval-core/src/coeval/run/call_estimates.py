"""What one call of each (model, phase) is expected to cost before any has returned: the
budget counts calls in flight at it (:mod:`coeval.scheduler.admission`), and the call
ledger writes it beside each call's start."""

from __future__ import annotations

from typing import TYPE_CHECKING

from coeval.config.model import Config
from coeval.planning.cost import estimate_cost

if TYPE_CHECKING:
    from coeval.plugins.manager import Registries

__all__ = ["call_estimates"]


def call_estimates(config: Config, registries: Registries) -> dict[tuple[str, str], float]:
    """Per (model, phase): the dearest task's cost per call in the plan's heuristics (no
    call is made). Models without a known price are left out (their calls count at what
    they are seen to cost)."""
    try:
        estimate = estimate_cost(config, samples=0, registries=registries)
    except (OSError, ValueError):  # an unreadable folder: the run reports it itself
        return {}
    out: dict[tuple[str, str], float] = {}
    for cell in estimate.cells:
        if cell.calls and cell.cost_usd:
            key = (cell.model, cell.phase)
            out[key] = max(out.get(key, 0.0), cell.cost_usd / cell.calls)
    return out
