"""What the loader, the planner, ``plan`` and ``status`` ask of a registered phase.

Phases come from plugins (the five standard ones from the core's own plugin), so their
titles, modes and call counts are read from the phase objects, never from a fixed list: a
third-party phase gets a mode in ``experiment.phases`` and a row in every table. Members a
phase may leave out (``title``, ``short``, ``plan``) have plain fallbacks here.
"""

from __future__ import annotations

from coeval.config.model import Config
from coeval.config.phase_modes import default_mode, phase_modes
from coeval.phases.base import Phase, PlannedCalls, RunView

__all__ = ["configured_mode", "phase_short", "phase_title", "planned_calls"]


def phase_title(phase: Phase) -> str:
    """How pages and tables name a phase (``"5 evaluation"``); its id when it has no title."""
    return str(getattr(phase, "title", "") or phase.name)


def phase_short(phase: Phase) -> str:
    """The short column label of a phase (``"5 evaluations"``); its title otherwise."""
    return str(getattr(phase, "short", "") or phase_title(phase))


def planned_calls(phase: Phase, view: RunView) -> PlannedCalls:
    """``phase.plan(view)``. A phase without ``plan`` (or whose ``plan`` returns something
    else) counts 0 calls, with a note saying so: the plan of the rest still prints."""
    plan = getattr(phase, "plan", None)
    if not callable(plan):
        why = "it has no plan()"
    else:
        planned = plan(view)
        if isinstance(planned, PlannedCalls):
            return planned
        why = f"its plan() returned {type(planned).__name__}, not PlannedCalls"
    return PlannedCalls(phase.name, notes=(f"phase {phase.name}: calls unknown ({why}); counted as 0",))


def configured_mode(config: Config, phase: Phase) -> str:
    """The mode ``experiment.phases`` gives ``phase`` (its default when the config was
    loaded without knowing the phase)."""
    default = default_mode(phase_modes(phase), resumed=bool(config.experiment.resume_from))
    return config.experiment.phases.mode(phase.name, default)
