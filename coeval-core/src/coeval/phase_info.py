"""What the loader, the planner, ``plan`` and ``status`` ask of a registered phase.

Phases come from plugins (the five standard ones from the core's own plugin), so their
ids, modes, titles and call counts are read from the phase objects, never from a fixed
list: a third-party phase gets a mode in ``experiment.phases`` and a row in every table.
Members a phase may leave out (``title``, ``short``, ``plan``) have plain fallbacks here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from coeval.config.model import Config
from coeval.phases.base import PlannedCalls, RunView

__all__ = [
    "ALL_MODES",
    "configured_mode",
    "default_mode",
    "phase_modes",
    "phase_short",
    "phase_title",
    "planned_calls",
    "registered_modes",
]

#: Modes a phase accepts when it does not say (the seed's four).
ALL_MODES = ("New", "Keep", "Extend", "Model")


def phase_modes(phase: Any) -> tuple[str, ...]:
    """The modes ``phase`` accepts."""
    modes = getattr(phase, "modes", None)
    return tuple(str(m) for m in modes) if modes else ALL_MODES


def phase_title(phase: Any) -> str:
    """How pages and tables name a phase (``"5 evaluation"``); its id when it has no title."""
    return str(getattr(phase, "title", "") or phase.name)


def phase_short(phase: Any) -> str:
    """The short column label of a phase (``"5 evaluations"``); its title otherwise."""
    return str(getattr(phase, "short", "") or phase_title(phase))


def default_mode(modes: Iterable[str], *, resumed: bool) -> str:
    """The mode of a plugin phase the config leaves out: New, or Extend on a run that
    forks an earlier one (as for phases 4-5); the phase's first mode if it has neither."""
    accepted = tuple(modes) or ALL_MODES
    for wanted in ("Extend", "New") if resumed else ("New",):
        if wanted in accepted:
            return wanted
    return accepted[0]


def registered_modes(phases: Iterable[Any]) -> dict[str, tuple[str, ...]]:
    """Phase id -> accepted modes, for every registered phase (in the order given)."""
    return {str(p.name): phase_modes(p) for p in phases}


def planned_calls(phase: Any, view: RunView) -> PlannedCalls:
    """``phase.plan(view)``; a phase without ``plan`` counts 0 calls, with a note."""
    plan = getattr(phase, "plan", None)
    if not callable(plan):
        return PlannedCalls(
            phase.name,
            notes=(f"phase {phase.name} does not say how many calls it makes (no plan()); counted as 0",),
        )
    planned = plan(view)
    if not isinstance(planned, PlannedCalls):
        raise TypeError(f"phase {phase.name}: plan() returned {type(planned).__name__}, not PlannedCalls")
    return planned


def configured_mode(config: Config, phase: Any) -> str:
    """The mode ``experiment.phases`` gives ``phase`` (its default when the config was
    loaded without knowing the phase)."""
    default = default_mode(phase_modes(phase), resumed=bool(config.experiment.resume_from))
    return config.experiment.phases.mode(phase.name, default)
