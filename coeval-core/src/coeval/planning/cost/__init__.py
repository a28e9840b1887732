"""Cost planning: calls, tokens, dollars and time of an experiment before it runs.

    from coeval.planning.cost import estimate_cost, format_estimate
    estimate = estimate_cost(config, samples=0)       # heuristics only, no call
    print(estimate.total_calls, estimate.total_cost_usd)
    print(format_estimate(estimate))

See :mod:`coeval.planning.cost.estimate` for where each number comes from.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coeval.console import output_console
from coeval.planning.cost.estimate import CellEstimate, CostEstimate, estimate_cost
from coeval.planning.cost.pricing import Price, price_for
from coeval.planning.cost.report import (
    ESTIMATE_FILE,
    format_duration,
    format_estimate,
    planned_phase_seconds,
    print_estimate,
    read_estimate,
    write_estimate,
)

if TYPE_CHECKING:
    from coeval.plugins.manager import Registries

__all__ = [
    "ESTIMATE_FILE",
    "CellEstimate",
    "CostEstimate",
    "Price",
    "estimate_and_report",
    "estimate_cost",
    "format_duration",
    "format_estimate",
    "planned_phase_seconds",
    "price_for",
    "print_estimate",
    "read_estimate",
    "record_estimate",
    "write_estimate",
]


def estimate_and_report(
    config: Any,
    *,
    only_models: tuple[str, ...] = (),
    keys_file: str | None = None,
    continue_run: bool = False,
    samples: int | None = None,
    write_file: bool = True,
    console: Any = None,
    registries: Registries | None = None,
    pipeline: bool = True,
) -> CostEstimate:
    """Estimate, print the tables and write ``cost_estimate.json`` into the run folder
    (what ``coeval run --estimate-only`` and ``estimate_cost: true`` do)."""
    estimate = estimate_cost(
        config, samples=samples, continue_run=continue_run, keys_file=keys_file, only_models=only_models,
        registries=registries, pipeline=pipeline,
    )
    print_estimate(estimate, console)
    if write_file:
        folder = Path(config.experiment.storage_folder) / config.experiment.id
        path = write_estimate(estimate, folder / ESTIMATE_FILE)
        (console or output_console()).print(f"estimate written to {path}", highlight=False)
    return estimate


def record_estimate(
    config: Any,
    *,
    only_models: tuple[str, ...] = (),
    keys_file: str | None = None,
    registries: Registries | None = None,
    pipeline: bool = True,
) -> Path | None:
    """Before a run that asked for no estimate: keep one in ``cost_estimate.json`` anyway, so
    ``coeval status`` can set it against what the run did. No paid call (``samples=0``; a
    free ``mock`` is measured); nothing printed; an estimate already there (``run
    --estimate-only`` before) is kept. Never stops the run: a failure is only logged."""
    path = Path(config.experiment.storage_folder) / config.experiment.id / ESTIMATE_FILE
    if path.exists():
        return None
    try:
        estimate = estimate_cost(config, samples=0, keys_file=keys_file, only_models=only_models,
                                 registries=registries, pipeline=pipeline)
        return write_estimate(estimate, path)
    except Exception as exc:  # an estimate is a courtesy: the run goes on without one
        logging.getLogger(__name__).warning("no pre-run estimate recorded: %s", exc)
        return None
