"""What a run did, and how ``coeval run`` exits: the run's result record, its exit codes and
the error of a run that cannot start. They sit below the runner, so that what the runner
uses (signal handling, the CLI) can name them without importing the runner."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import attrs

from coeval.phases.base import PhaseResult

__all__ = ["EXIT_FAILED", "EXIT_GAPS", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "RunError", "RunResult"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_GAPS = 3
EXIT_INTERRUPTED = 130


class RunError(Exception):
    """The run cannot start or go on (bad input, busy folder, missing distribution)."""


@attrs.frozen
class RunResult:
    """What a run did. ``phases`` maps phase id -> :class:`PhaseResult`."""

    exit_code: int
    run_folder: Path
    status: str  # completed | incomplete | failed | interrupted | error
    phases: Mapping[str, PhaseResult] = attrs.field(factory=dict)
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.exit_code == EXIT_OK

    def counts(self) -> dict[str, dict[str, int]]:
        """Per phase: records written ok / failed by this run, items left (quota, ...)."""
        return {
            name: {"written": r.written, "failed": r.failed, "skipped": r.skipped, "calls": r.calls}
            for name, r in self.phases.items()
        }
