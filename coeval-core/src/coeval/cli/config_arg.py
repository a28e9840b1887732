"""The experiment config as a positional argument or ``--config``, whichever the user typed.

``coeval run c.yaml`` is what users of other tools try first; ``--config c.yaml`` keeps
working for scripts written against earlier versions.
"""

from __future__ import annotations

from coeval.cli.errors import UserError

__all__ = ["choose_config_path"]


def choose_config_path(positional: str | None, option: str | None, command: str) -> str:
    """The one config path given, or a :class:`UserError` when none or two different ones."""
    if positional and option and positional != option:
        raise UserError(
            f"two configs given: {positional} and --config {option}",
            hint=f"give one: coeval {command} CONFIG or coeval {command} --config CONFIG",
        )
    chosen = positional or option
    if not chosen:
        raise UserError(
            "no config given", hint=f"coeval {command} CONFIG (or --config CONFIG); `coeval init` writes a starter one"
        )
    return chosen
