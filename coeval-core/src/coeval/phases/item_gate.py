"""The item-quality gate of a phase run: the checks ``experiment.item_checks`` enables, over
the run folder, with the checks each teacher's interface is exempt from.

The checks themselves are :mod:`coeval.quality`'s; a phase builds its gate here, where an
unknown check can stop the phase.
"""

from __future__ import annotations

from coeval.phases.base import PhaseError, RunView
from coeval.quality.gate import ItemGate, UnknownCheckError, resolve_checks

__all__ = ["gate_for"]


def gate_for(view: RunView) -> ItemGate:
    """The gate of a phase run: every registered check, as ``experiment.item_checks`` sets them."""
    try:
        checks = resolve_checks(view.registries.item_checks, view.config.experiment.item_checks)
    except UnknownCheckError as exc:
        raise PhaseError(str(exc)) from None
    exempt = {m.name: _exempt_checks(view, m.interface)
              for m in view.config.models_with_role("teacher")}
    return ItemGate(checks, view.run, exempt)


def _exempt_checks(view: RunView, interface: str) -> tuple[str, ...]:
    """The rule ids the teacher's interface declared say nothing about it."""
    facts = view.registries.interface_facts(interface)
    return facts.exempt_item_checks if facts is not None else ()
