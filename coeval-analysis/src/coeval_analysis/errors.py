"""Errors the analysis reports to users (bad run folders), with the CLI's exit code."""

from __future__ import annotations

__all__ = ["AnalysisInputError"]


class AnalysisInputError(ValueError):
    """The run folder cannot be analysed; the message names the file, the field and the rule.

    The CLI turns it into a one-line error and exit code 2, never a traceback.
    """

    exit_code = 2
