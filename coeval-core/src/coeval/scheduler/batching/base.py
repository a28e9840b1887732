"""The provider batch-runner contract, defined in :mod:`coeval.interfaces.batch` (below the
plugin contract, which names it) and kept importable from here."""

from coeval.interfaces.batch import TERMINAL_STATES, BatchJobStatus, BatchRunner, BatchState

__all__ = ["TERMINAL_STATES", "BatchJobStatus", "BatchRunner", "BatchState"]
