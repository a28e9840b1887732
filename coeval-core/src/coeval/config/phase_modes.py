"""Which modes a registered phase accepts, and which it gets when the config says none.

Read from the phase objects (the five standard ones and any plugin's), so the config's
loader can check ``experiment.phases`` and fill in defaults for phases it has no fixed list
of. It reads only a phase's ``name`` and optional ``modes`` (:class:`NamedPhase`), which
every registered :class:`coeval.contract.types.Phase` has.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

__all__ = ["ALL_MODES", "NamedPhase", "default_mode", "phase_modes", "registered_modes"]

#: Modes a phase accepts when it does not say (the seed's four).
ALL_MODES = ("New", "Keep", "Extend", "Model")


class NamedPhase(Protocol):
    """What is read of a registered phase here: its id (``modes``, when it has them, is
    looked up as an optional attribute)."""

    @property
    def name(self) -> str: ...


def phase_modes(phase: NamedPhase) -> tuple[str, ...]:
    """The modes ``phase`` accepts."""
    modes = getattr(phase, "modes", None)
    return tuple(str(m) for m in modes) if modes else ALL_MODES


def default_mode(modes: Iterable[str], *, resumed: bool) -> str:
    """The mode of a plugin phase the config leaves out: New, or Extend on a run that
    forks an earlier one (as for phases 4-5); the phase's first mode if it has neither."""
    accepted = tuple(modes) or ALL_MODES
    for wanted in ("Extend", "New") if resumed else ("New",):
        if wanted in accepted:
            return wanted
    return accepted[0]


def registered_modes(phases: Iterable[NamedPhase]) -> dict[str, tuple[str, ...]]:
    """Phase id -> accepted modes, for every registered phase (in the order given)."""
    return {str(p.name): phase_modes(p) for p in phases}
