"""Run logging through structlog: readable lines on the console, JSON lines in ``run.log``.

Every event passes :func:`coeval.config.credentials.redact` before it is rendered, so a key that
slips into a message (an SDK error quoting a header, say) never reaches the terminal or the
run folder. The console handler looks up ``sys.stderr`` on every line, so progress bars that
redirect stderr while drawing keep the log above the bars.

    with run_logging(run.log_path, level="INFO") as log:
        log.info("phase started", phase="evaluation", items=1200)
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

import structlog

from coeval.config.credentials import redact
from coeval.console._log import plain_renderer
from coeval.storage.safe_files import open_no_follow

__all__ = ["LOGGER_NAME", "get_logger", "redact_event", "run_logging"]

LOGGER_NAME = "coeval"
_configured = False


def redact_event(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """structlog processor: scrub known secrets from every string in the event."""
    for key, value in list(event.items()):
        if isinstance(value, str):
            event[key] = redact(value)
        elif isinstance(value, list | tuple):
            event[key] = type(value)(redact(v) if isinstance(v, str) else v for v in value)
    return event


_PRE_CHAIN: list[Any] = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
]


def _configure_structlog() -> None:
    global _configured
    if _configured:
        return
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.stdlib.filter_by_level,
            structlog.stdlib.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            redact_event,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    _configured = True


def get_logger(**context: Any) -> Any:
    """A structlog logger for CoEval events (bound to ``context``)."""
    _configure_structlog()
    return structlog.get_logger(LOGGER_NAME).bind(**context)


class _CurrentStderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time of each record."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


def _formatter(renderer: Any) -> logging.Formatter:
    return structlog.stdlib.ProcessorFormatter(
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, redact_event, renderer],
        foreign_pre_chain=_PRE_CHAIN,
    )


class _RunLogHandler(logging.FileHandler):
    """``run.log``. A write that fails (disk full, folder gone) is reported once in one
    line, not as logging's default traceback on every event: the run itself stops on the
    same error with a clear message when it next writes a record."""

    _reported = False

    def _open(self) -> Any:
        """``run.log`` is appended to, never through a symbolic link (a shared run may hold
        one pointing anywhere), and readable by its owner only."""
        fd = open_no_follow(Path(self.baseFilename), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        return os.fdopen(fd, "a", encoding=self.encoding, errors=self.errors)

    def handleError(self, record: logging.LogRecord) -> None:
        if not self._reported:
            self._reported = True
            exc = sys.exc_info()[1]
            reason = getattr(exc, "strerror", None) or type(exc).__name__
            sys.stderr.write(f"coeval: cannot write {self.baseFilename}: {reason}\n")


@contextlib.contextmanager
def run_logging(
    log_file: Path | None,
    *,
    level: str = "INFO",
    console: bool = True,
    console_level: str | None = None,
    **context: Any,
) -> Iterator[Any]:
    """Attach the console and ``run.log`` handlers for the duration of a run.

    The file always receives ``level`` and above as JSON lines (``pid`` included, so
    ``--only-models`` shards sharing one folder can be told apart); the console shows
    ``console_level`` (default: ``level``) in a readable form: one plain sentence per event
    at WARNING and above (:mod:`coeval.console._log`), every field below.
    """
    _configure_structlog()
    base = logging.getLogger(LOGGER_NAME)
    handlers: list[logging.Handler] = []
    numeric = logging.getLevelName(level.upper())
    numeric = numeric if isinstance(numeric, int) else logging.INFO
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        fh = _RunLogHandler(log_file, encoding="utf-8")
        fh.setFormatter(_formatter(structlog.processors.JSONRenderer(ensure_ascii=False)))
        fh.setLevel(numeric)
        handlers.append(fh)
    if console:
        ch = _CurrentStderrHandler()
        clevel = logging.getLevelName((console_level or level).upper())
        ch.setLevel(clevel if isinstance(clevel, int) else numeric)
        # warnings alone are read by a person: one plain sentence; debug/info show every field
        plain = ch.level >= logging.WARNING
        renderer = plain_renderer if plain else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
        ch.setFormatter(_formatter(renderer))
        handlers.append(ch)
    old_level, old_propagate = base.level, base.propagate
    base.setLevel(min([numeric, *[h.level for h in handlers]]) if handlers else numeric)
    base.propagate = False
    for h in handlers:
        base.addHandler(h)
    try:
        yield get_logger(pid=os.getpid(), **context)
    finally:
        for h in handlers:
            base.removeHandler(h)
            h.close()
        base.setLevel(old_level)
        base.propagate = old_propagate
