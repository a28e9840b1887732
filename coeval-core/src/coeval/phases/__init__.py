"""Pipeline phases. The five standard ones (:mod:`coeval.phases.standard`) are registered
by the core plugin like any third-party phase (``register_phases``); see
:class:`coeval.phases.base.Phase`. Their fixed facts (ids, folders, roles) are
:mod:`coeval.phase_ids`'s, below every layer.

The names below load :mod:`coeval.phases.base` on first use, so that importing one module
of the package loads nothing else. The run order and the modes of every registered phase,
the standard five and any plugin's, are the config's (:mod:`coeval.config.phase_order`,
:mod:`coeval.config.phase_modes`), so that the config's loader reads them too.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "Counts",
    "Phase",
    "PhaseContext",
    "PhaseError",
    "PhaseRefusedError",
    "PhaseResult",
    "PlannedCalls",
    "PlanningPhase",
    "RunView",
    "Survey",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("coeval.phases.base"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
