"""What ``coeval run`` does after the pipeline: the ``register_run_end`` actions of plugins."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from coeval.plugins.manager import collect

if TYPE_CHECKING:
    from coeval.run.runner import RunResult

__all__ = ["run_end_actions"]

log = logging.getLogger("coeval")


def _wrote_records(result: RunResult) -> bool:
    """The run ended on its own (not estimated, stopped or refused) and wrote records:
    a ``--continue`` that found nothing missing changed nothing to act on."""
    if result.status == "estimated" or result.exit_code not in (0, 1, 3):
        return False
    return any(r.written or r.failed for r in result.phases.values())


def run_end_actions(result: RunResult) -> None:
    """Call every registered run-end action on the run's folder when it wrote records;
    one that fails is logged."""
    if not _wrote_records(result):
        return
    for entry in collect("register_run_end"):
        name, action = entry.name, entry.value
        try:
            action(result.run_folder)
        except Exception as exc:  # an extra must never turn a run into a failure
            log.warning("run-end action %s failed on %s: %s", name, result.run_folder, exc)
