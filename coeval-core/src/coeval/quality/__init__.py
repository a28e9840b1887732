"""Item quality: reject junk teacher output in phases 1-3, count it, and let plugins add checks.

See docs/item-quality.md for the rule ids, their thresholds and ``experiment.item_checks``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coeval.quality.checks import BUILTIN_CHECKS
from coeval.quality.gate import QUALITY_KIND, ItemGate, QualityRejection, UnknownCheckError
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
    "register_builtin_checks",
    "rejections",
]


def register_builtin_checks(register: RegisterItemCheck) -> None:
    """What the core plugin's ``register_item_checks`` hook registers."""
    for rule, (check, kinds, options) in BUILTIN_CHECKS.items():
        register(rule, check, kinds=kinds, options=options)
