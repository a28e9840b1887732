"""Options of one ``coeval run`` (CLI flags or Python callers), separate from the config file."""

from __future__ import annotations

import attrs

__all__ = ["RunOptions"]


@attrs.frozen
class RunOptions:
    continue_run: bool = False  # --continue: resume in place
    only_models: tuple[str, ...] = ()  # --only-models: shard by model
    keys_file: str | None = None  # --keys
    resume_from: str | None = None  # --resume: overrides experiment.resume_from
    probe_mode: str | None = None  # overrides experiment.probe_mode
    probe_on_fail: str | None = None
    log_level: str | None = None
    estimate_only: bool = False
    estimate_samples: int | None = None
    progress: bool = True  # console output: bars on a terminal, a summary line per phase; False: silent
    verbosity: int = 0  # -1 (--quiet): no bars, summary lines or warnings; 1 (--verbose): debug events
    #: run phases 3-5 at once where their modes allow it (see coeval.run.pipelining)
    pipeline: bool = True
    closing_line: bool = True  # "coeval: run <status> (<folder>)" at the end (off for a scratch run)

    def console_level(self, default: str) -> str:
        """The console's log level: ``default`` unless --quiet or --verbose says otherwise."""
        return "ERROR" if self.verbosity < 0 else "DEBUG" if self.verbosity > 0 else default
