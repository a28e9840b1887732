"""What ``coeval run`` does after the pipeline: the ``register_run_end`` actions of plugins."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from coeval.plugins import get_plugin_manager

__all__ = ["run_end_actions"]

log = logging.getLogger("coeval")


def run_end_actions(run_folder: Path) -> None:
    """Call every registered run-end action on ``run_folder``; one that fails is logged."""
    actions: dict[str, Callable[[Path], None]] = {}

    def register(name: str, action: Callable[[Path], None]) -> None:
        actions.setdefault(name, action)

    get_plugin_manager().hook.register_run_end(register=register)
    for name, action in actions.items():
        try:
            action(run_folder)
        except Exception as exc:  # an extra must never turn a run into a failure
            log.warning("run-end action %s failed on %s: %s", name, run_folder, exc)
