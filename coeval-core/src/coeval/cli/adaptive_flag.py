"""``--adaptive`` of ``coeval run`` and ``coeval plan``, and what an adaptive run prints at its end."""

from __future__ import annotations

from pathlib import Path

import attrs
import click

from coeval.cli.errors import UserError
from coeval.config.model import AdaptiveConfig, Config
from coeval.phases.evaluation_rounds import adaptive_lines, recorded
from coeval.storage.run_folder import RunFolder

__all__ = ["INTERVALS_NOTE", "print_adaptive_end", "with_adaptive"]

#: how an adaptive run's intervals are to be read (the run's end and ``coeval analyze``)
INTERVALS_NOTE = ("an adaptive run's intervals are the design's, at the level of the look where it stopped (alpha "
                  "spent over a fixed number of looks), refit on every judgment it bought; the judgments it did not "
                  "buy are absent by design, not missing")


def with_adaptive(config: Config, *, only_models: tuple[str, ...] = ()) -> Config:
    """``config`` with ``experiment.adaptive`` on: as the config sets it, else the defaults.
    Its rounds are decided from every judge's judgments, so one process runs them: not
    ``--only-models`` shards."""
    if only_models:
        raise UserError("adaptive evaluation decides each round from every judge's judgments, so one process "
                        "runs it, not --only-models shards",
                        "run without --only-models, or without --adaptive and experiment.adaptive")
    if config.experiment.adaptive is not None:
        return config
    return attrs.evolve(config, experiment=attrs.evolve(config.experiment, adaptive=AdaptiveConfig()))


def print_adaptive_end(run_folder: str | Path | None) -> None:
    """The adaptive design's decisions (screening, looks, stop, calls saved) on stderr."""
    if run_folder is None:
        return
    record = recorded(RunFolder(Path(run_folder)))
    lines = adaptive_lines(record)
    if not lines:
        return
    for line in lines:
        click.echo(line, err=True)
    click.echo(f"note: {INTERVALS_NOTE}", err=True)
