"""``-q/--quiet`` and ``-v/--verbose``: one meaning on every command.

quiet: no progress display, no informational lines, only errors (and the outcome);
verbose: debug and info events of the ``coeval`` logger on stderr.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import click

from coeval.logging import run_logging

__all__ = ["QUIET", "VERBOSE", "command_logging", "verbosity", "verbosity_options"]

F = TypeVar("F", bound=Callable[..., Any])

QUIET = -1
VERBOSE = 1


def verbosity_options(func: F) -> F:
    """Add ``-q/--quiet`` and ``-v/--verbose`` (parameters ``quiet`` and ``verbose``)."""
    func = click.option("-v", "--verbose", is_flag=True, help="Show debug and info events on stderr.")(func)
    return click.option("-q", "--quiet", is_flag=True, help="No progress display and no informational output.")(
        func
    )


def verbosity(quiet: bool, verbose: bool) -> int:
    """-1 quiet, 0 normal, 1 verbose; both flags at once is a usage error (exit 2)."""
    if quiet and verbose:
        raise click.UsageError("-q/--quiet and -v/--verbose cannot be used together")
    return QUIET if quiet else VERBOSE if verbose else 0


@contextlib.contextmanager
def command_logging(level: int) -> Iterator[None]:
    """For commands other than ``run``: the console shows errors only when quiet, debug
    events when verbose, and warnings otherwise, each as one plain sentence."""
    with run_logging(None, level="DEBUG" if level > 0 else "ERROR" if level < 0 else "WARNING"):
        yield
