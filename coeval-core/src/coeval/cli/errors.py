"""One way for every command to fail on bad input: a clear message, exit code 2, no traceback.

Wrap a click command's callback with :func:`user_errors` (``run``, ``plan``, ``describe``
and plugin commands all do)::

    @click.command("plan")
    @user_errors
    def command(...): ...

It turns :class:`coeval.config.ConfigError` (every validation issue with its rule, path,
line and fix), :class:`coeval.config.credentials.KeyFileError` and :class:`UserError` (raise it
anywhere for a problem the user must fix, e.g. an interface whose distribution is not
installed) into text on stderr and exit code 2. Secrets are scrubbed from the text.
Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from coeval.contract.errors import DuplicateRegistrationError

__all__ = [
    "ERROR_PREFIX",
    "EXIT_USAGE",
    "UserError",
    "echo_issues",
    "report_user_error",
    "show_click_error",
    "user_errors",
]

EXIT_USAGE = 2
#: the one prefix of every error line, ours and click's (bad option, missing argument)
ERROR_PREFIX = "error:"
F = TypeVar("F", bound=Callable[..., Any])


class UserError(Exception):
    """A problem the user fixes (bad input, missing file, missing plugin), not a bug.

    ``hint`` is an optional one-line fix shown under the message.
    """

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


def echo_issues(issues: Any, *, err: bool = True) -> None:
    """Print validation issues (errors and warnings), one block each."""
    for issue in issues:
        prefix = "warning" if getattr(issue, "severity", "error") == "warning" else "error"
        text = issue.format()
        style = "yellow" if prefix == "warning" else "red"
        head, _, rest = text.partition("\n")
        click.secho(head, fg=style, err=err)
        if rest:
            click.echo(rest, err=err)


def report_user_error(exc: BaseException) -> int | None:
    """Print ``exc`` if it is a user error and return the exit code; None for anything else."""
    # lazy: they pull yaml, attrs and jsonschema into coeval.cli.main, which stays light
    from coeval.config.credentials import KeyFileError, redact
    from coeval.config.errors import ConfigError

    if isinstance(exc, ConfigError):
        n = len(exc.errors)
        where = exc.source or "config"
        click.secho(f"{where}: {n} problem{'s' if n != 1 else ''} found", fg="red", bold=True, err=True)
        echo_issues(exc.issues)
        return EXIT_USAGE
    if isinstance(exc, KeyFileError):
        click.secho(f"{ERROR_PREFIX} {redact(str(exc))}", fg="red", err=True)
        hint = exc.hint or "the key file holds `providers:` with one entry per provider (see docs/configuration.md)"
        click.echo(f"    fix: {hint}", err=True)
        return EXIT_USAGE
    if isinstance(exc, DuplicateRegistrationError):
        click.secho(f"{ERROR_PREFIX} plugin conflict: {exc}", fg="red", err=True)
        return EXIT_USAGE
    # a FIFO, a device or an outside link in a run folder; the guard's module is looked up, not
    # imported: never loaded, it refused nothing (and start-up stays free of storage)
    safe_files = sys.modules.get("coeval.storage.safe_files")
    if safe_files is not None and isinstance(exc, safe_files.UnsafeRunFile):
        click.secho(f"{ERROR_PREFIX} {redact(str(exc))}", fg="red", err=True)
        return EXIT_USAGE
    if isinstance(exc, UserError):
        click.secho(f"{ERROR_PREFIX} {redact(str(exc))}", fg="red", err=True)
        if exc.hint:
            click.echo(f"    fix: {redact(exc.hint)}", err=True)
        return EXIT_USAGE
    return None


def show_click_error(exc: click.ClickException) -> Callable[..., None]:
    """A ``show`` for a click exception that prints as click does (usage, help hint) but
    with :data:`ERROR_PREFIX` in place of click's ``Error:``."""

    def show(file: Any = None) -> None:
        ctx = getattr(exc, "ctx", None)
        if isinstance(exc, click.UsageError) and ctx is not None:
            click.echo(ctx.get_usage(), err=file is None, file=file, color=ctx.color)
            help_names = ctx.command.get_help_option_names(ctx)
            if help_names:
                click.echo(f"Try '{ctx.command_path} {max(help_names, key=len)}' for help.\n",
                           err=file is None, file=file, color=ctx.color)
        click.echo(f"{ERROR_PREFIX} {exc.format_message()}", err=file is None, file=file)

    return show


def user_errors(func: F) -> F:
    """Decorator: user errors raised by ``func`` end the command with exit code 2."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:  # re-raised below unless it is a user error
            code = report_user_error(exc)
            if code is None:
                raise
            sys.exit(code)

    return wrapper  # type: ignore[return-value]
