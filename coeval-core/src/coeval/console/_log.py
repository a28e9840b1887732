"""Warnings and errors on the console as one plain sentence each.

At the default verbosity the console shows only warnings and errors, and a person reads
them: ``coeval: warning: response_collection: batch job not finished yet; ... (job
batch_12, model gpt-4o-mini)`` rather than structlog's ``[warning  ] ... job=batch_12
pid=811``. Bookkeeping fields (time, pid, experiment id) and tracebacks stay in ``run.log``,
which keeps every field of every event as JSON; ``--verbose`` shows the full events.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from coeval.console.text import plain

__all__ = ["plain_renderer"]

#: Fields that say nothing to the reader of one console line (run.log keeps them).
_HIDDEN = frozenset({
    "event", "level", "timestamp", "pid", "experiment", "logger", "phase", "exception", "exc_info",
    "stack_info", "_record", "_from_structlog",
})
_LEVEL_WORDS = {"critical": "error", "exception": "error", "warn": "warning"}


def _value(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple | set | frozenset):
        return ", ".join(_value(v) for v in value)
    return str(value)


def plain_renderer(_logger: Any, method: str, event: MutableMapping[str, Any]) -> str:
    """structlog renderer: ``coeval: <level>: [<phase>: ]<event> (<field> <value>, ...)``."""
    level = str(event.get("level") or method).lower()
    level = _LEVEL_WORDS.get(level, level)
    phase = event.get("phase")
    details = [f"{key} {_value(value)}" for key, value in event.items()
               if key not in _HIDDEN and value is not None and value != ""]
    text = str(event.get("event", "")).strip()
    # fields carry model output and run-folder ids: no control sequence reaches the terminal
    return plain(f"coeval: {level}: " + (f"{phase}: " if phase else "") + text
                 + (f" ({', '.join(details)})" if details else ""))
