"""Item quality: reject junk teacher output in phases 1-3, count it, and let plugins add checks.

See docs/item-quality.md for the rule ids, their thresholds and ``experiment.item_checks``.
"""

from __future__ import annotations

from typing import Any

from coeval.phases.base import PhaseError
from coeval.quality.checks import BUILTIN_CHECKS
from coeval.quality.gate import QUALITY_KIND, ItemGate, QualityRejection, UnknownCheckError, resolve_checks
from coeval.quality.ledger import rejections
from coeval.quality.model import DATAPOINT, MAP_KINDS, Candidate, CheckContext

__all__ = [
    "BUILTIN_CHECKS",
    "DATAPOINT",
    "MAP_KINDS",
    "QUALITY_KIND",
    "Candidate",
    "CheckContext",
    "ItemGate",
    "QualityRejection",
    "UnknownCheckError",
    "gate_for",
    "register_builtin_checks",
    "rejections",
]


def register_builtin_checks(register: Any) -> None:
    """What the core plugin's ``register_item_checks`` hook registers."""
    for rule, (check, kinds, options) in BUILTIN_CHECKS.items():
        register(rule, check, kinds=kinds, options=options)


def gate_for(view: Any) -> ItemGate:
    """The gate of a phase run: every registered check, as ``experiment.item_checks`` sets them."""
    try:
        checks = resolve_checks(view.registries.item_checks, view.config.experiment.item_checks)
    except UnknownCheckError as exc:
        raise PhaseError(str(exc)) from None
    exempt = {m.name: tuple(view.interface_options(m).get("exempt_item_checks") or ())
              for m in view.config.models_with_role("teacher")}
    return ItemGate(checks, view.run, exempt)
