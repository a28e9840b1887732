"""``-q/--quiet`` and ``-v/--verbose``: one meaning on every command.

quiet: no progress display, no informational lines, only errors (and the outcome);
verbose: debug and info events of the ``coeval`` logger on stderr.

Commands that act on the flags themselves (``run``, ``status``, ``analyze``) declare them
with :func:`verbosity_options`; every other command, plugin commands included, gets them
from :func:`with_verbosity`, which the ``coeval`` group applies when it loads a command,
so no command can lack them.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import click

__all__ = [
    "QUIET",
    "VERBOSE",
    "command_logging",
    "current_verbosity",
    "info",
    "verbosity",
    "verbosity_options",
    "with_verbosity",
]

F = TypeVar("F", bound=Callable[..., Any])

QUIET = -1
VERBOSE = 1
_META_KEY = "coeval.verbosity"
_QUIET_HELP = "No progress display and no informational output."
_VERBOSE_HELP = "Show debug and info events on stderr."


def verbosity_options(func: F) -> F:
    """Add ``-q/--quiet`` and ``-v/--verbose`` (parameters ``quiet`` and ``verbose``)."""
    func = click.option("-v", "--verbose", is_flag=True, help=_VERBOSE_HELP)(func)
    return click.option("-q", "--quiet", is_flag=True, help=_QUIET_HELP)(func)


def verbosity(quiet: bool, verbose: bool) -> int:
    """-1 quiet, 0 normal, 1 verbose; both flags at once is a usage error (exit 2)."""
    if quiet and verbose:
        raise click.UsageError("-q/--quiet and -v/--verbose cannot be used together")
    level = QUIET if quiet else VERBOSE if verbose else 0
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta[_META_KEY] = level
    return level


def current_verbosity() -> int:
    """The level the running command was given (0 outside a command)."""
    ctx = click.get_current_context(silent=True)
    return int(ctx.meta.get(_META_KEY, 0)) if ctx is not None else 0


def info(message: str, *, err: bool = False) -> None:
    """An informational line (a next step, a file written): left out under ``--quiet``."""
    if current_verbosity() > QUIET:
        click.echo(message, err=err)


@contextlib.contextmanager
def command_logging(level: int) -> Iterator[None]:
    """For commands other than ``run``: the console shows errors only when quiet, debug
    events when verbose, and warnings otherwise, each as one plain sentence."""
    from coeval.console.logs import run_logging  # here: structlog would slow down `coeval --help`

    with run_logging(None, level="DEBUG" if level > 0 else "ERROR" if level < 0 else "WARNING"):
        yield


def _has_flags(command: click.Command) -> bool:
    names = {param.name for param in command.params}
    return "quiet" in names and "verbose" in names


def with_verbosity(command: click.Command) -> click.Command:
    """Give ``command`` (and a group's subcommands) ``-q`` and ``-v`` unless it declares
    them; its callback then runs under :func:`command_logging` and never sees the flags.
    Idempotent: the group calls it each time it hands a command out."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            with_verbosity(sub)
    if _has_flags(command) or command.callback is None:
        return command
    taken = {opt for param in command.params for opt in param.opts}
    if {"-q", "-v"} & taken:
        return command  # the command gave the short flags another meaning; leave it alone
    original = command.callback

    @functools.wraps(original)
    def callback(*args: Any, quiet: bool = False, verbose: bool = False, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        ctx.with_resource(command_logging(verbosity(quiet, verbose)))  # lasts through subcommands
        return original(*args, **kwargs)

    command.params.append(click.Option(["-q", "--quiet"], is_flag=True, help=_QUIET_HELP))
    command.params.append(click.Option(["-v", "--verbose"], is_flag=True, help=_VERBOSE_HELP))
    command.callback = callback
    return command
