"""After a run: name benchmark teachers that supplied no datapoints (nothing was ingested).

Such a teacher makes no calls, so the run ends ``completed`` with nothing of it to answer;
without this note the user sees a short run and no reason.
"""

from __future__ import annotations

import click

from coeval.config.model import Config
from coeval.shipped_interfaces import BENCHMARK_INTERFACE
from coeval.storage.run_folder import RunFolder

__all__ = ["empty_benchmark_teachers", "warn_empty_benchmark_teachers"]



def empty_benchmark_teachers(config: Config) -> list[str]:
    """Benchmark teachers of ``config`` with no datapoint in any task of the run folder."""
    run = RunFolder.for_experiment(config.experiment.storage_folder, config.experiment.id)
    empty = []
    for model in config.models:
        if model.interface != BENCHMARK_INTERFACE or "teacher" not in model.roles:
            continue
        files = [run.datapoints_path(task.name, model.name) for task in config.tasks]
        if not any(path.is_file() and path.stat().st_size > 0 for path in files):
            empty.append(model.name)
    return empty


def warn_empty_benchmark_teachers(config: Config, *, quiet: bool = False) -> list[str]:
    """Warn about each benchmark teacher that supplied nothing (not under ``--quiet``);
    returns their names."""
    empty = empty_benchmark_teachers(config)
    run_dir = RunFolder.for_experiment(config.experiment.storage_folder, config.experiment.id).root
    for name in [] if quiet else empty:
        click.secho(
            f"warning: benchmark teacher {name} supplied no datapoints (nothing ingested into it yet); "
            f"ingest first, e.g. `coeval ingest --run {run_dir} -b BENCHMARK --teacher {name} --task-name TASK`, "
            "then `coeval run CONFIG --continue`",
            fg="yellow",
            err=True,
        )
    return empty
