"""``--limit N``: a small slice of an experiment for quick iteration.

The limit caps each task's ``sampling.total`` (datapoints per (task, teacher)), so the
answers and judgments that follow cover only those items. Datapoints are written in a
fixed order, so a later ``--continue`` with a larger N (or none) extends the same run:
the first items are kept, only the missing ones are made.
"""

from __future__ import annotations

import attrs

from coeval.config.model import Config

__all__ = ["limit_datapoints"]


def limit_datapoints(config: Config, limit: int) -> Config:
    """``config`` with every task's ``sampling.total`` at most ``limit``."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    tasks = tuple(
        attrs.evolve(task, sampling=attrs.evolve(task.sampling, total=min(task.sampling.total, limit)))
        for task in config.tasks
    )
    return attrs.evolve(config, tasks=tasks)
