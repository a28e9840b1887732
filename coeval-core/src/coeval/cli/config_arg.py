"""The experiment config as a positional argument or ``--config``, whichever the user typed.

``coeval run c.yaml`` is what users of other tools try first; ``--config c.yaml`` keeps
working for scripts written against earlier versions. With neither, ``coeval.yaml`` in the
current folder (the file ``coeval init`` writes) is used when it exists.
"""

from __future__ import annotations

from pathlib import Path

from coeval.cli.errors import UserError
from coeval.plugins.config_loading import load_config

__all__ = ["DEFAULT_CONFIG", "choose_config_path", "run_path_from"]

#: The config file ``coeval init`` writes, used when a command is given none.
DEFAULT_CONFIG = "coeval.yaml"


def _default_config() -> str | None:
    return DEFAULT_CONFIG if Path(DEFAULT_CONFIG).is_file() else None


def choose_config_path(positional: str | None, option: str | None, command: str) -> str:
    """The one config path given, or a :class:`UserError` when none or two different ones."""
    if positional and option and positional != option:
        raise UserError(
            f"two configs given: {positional} and --config {option}",
            hint=f"give one: coeval {command} CONFIG or coeval {command} --config CONFIG",
        )
    chosen = positional or option or _default_config()
    if not chosen:
        raise UserError(
            "no config given", hint=f"coeval {command} CONFIG (or --config CONFIG); `coeval init` writes a starter one"
        )
    return chosen


def run_path_from(run_path: str | None, config_path: str | None) -> str:
    """``--run`` as given, or the run folder ``--config`` names (storage_folder/experiment.id)."""
    if run_path and config_path:
        raise UserError("give --run or --config, not both")
    if run_path:
        return run_path
    config_path = config_path or _default_config()
    if not config_path:
        raise UserError(
            "no run given",
            hint=f"pass --run storage_folder/experiment_id or --config CONFIG (or run it where {DEFAULT_CONFIG} is)",
        )
    config = load_config(config_path, check_filesystem=False)
    return str(Path(config.experiment.storage_folder) / config.experiment.id)
