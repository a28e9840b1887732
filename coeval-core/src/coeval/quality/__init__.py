"""Item quality: reject junk teacher output in phases 1-3, count it, and let plugins add checks.

See docs/item-quality.md for the rule ids, their thresholds and ``experiment.item_checks``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coeval.phases.base import PhaseError
from coeval.quality.checks import BUILTIN_CHECKS
from coeval.quality.gate import QUALITY_KIND, ItemGate, QualityRejection, UnknownCheckError, resolve_checks
from coeval.quality.ledger import rejections
from coeval.quality.model import DATAPOINT, MAP_KINDS, Candidate, CheckContext

if TYPE_CHECKING:
    from coeval.contract.types import RegisterItemCheck

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


def register_builtin_checks(register: RegisterItemCheck) -> None:
    """What the core plugin's ``register_item_checks`` hook registers."""
    for rule, (check, kinds, options) in BUILTIN_CHECKS.items():
        register(rule, check, kinds=kinds, options=options)


def gate_for(view: Any) -> ItemGate:
    """The gate of a phase run: every registered check, as ``experiment.item_checks`` sets them."""
    try:
        checks = resolve_checks(view.registries.item_checks, view.config.experiment.item_checks)
    except UnknownCheckError as exc:
        raise PhaseError(str(exc)) from None
    exempt = {m.name: _exempt_checks(view, m.interface)
              for m in view.config.models_with_role("teacher")}
    return ItemGate(checks, view.run, exempt)


def _exempt_checks(view: Any, interface: str) -> tuple[str, ...]:
    """The rule ids the teacher's interface declared say nothing about it."""
    facts = view.registries.interface_facts(interface)
    return facts.exempt_item_checks if facts is not None else ()
