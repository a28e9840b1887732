"""The console that command output (tables, plans, reports) is printed on.

Rich sizes a console that is not a terminal to 80 columns, which cuts table cells short
with an ellipsis exactly when the output goes to a file, a pipe or CI, where nobody can
widen the window. Off a terminal this console is as wide as any line needs.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich loads when a console is made: `coeval --help` imports this package, not rich
    from rich.console import Console

__all__ = ["PIPE_WIDTH", "output_console"]

#: the width off a terminal: wide enough that no table or line is ever cut or wrapped
PIPE_WIDTH = 100_000


def output_console(*, stderr: bool = False, **options: Any) -> Console:
    """A rich console for stdout (or stderr): the terminal's width on a terminal, no
    width limit otherwise. ``options`` go to :class:`rich.console.Console`."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    if "width" not in options and not _isatty(stream):
        options["width"] = PIPE_WIDTH
    return Console(stderr=stderr, **options)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False
