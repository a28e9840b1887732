"""What ``run --continue --dry-run`` shows as each phase's mode: the one ``--continue``
runs it in (Keep for the attribute and rubric maps, Extend for the records), decided by the
same rule the runner uses, not the config's mode (New unless written otherwise)."""

from __future__ import annotations

import attrs

from coeval.config.model import Config
from coeval.config.phase_order import ordered_phases
from coeval.phases.run_selection import run_mode
from coeval.planning import Plan
from coeval.plugins.manager import registries

__all__ = ["with_continue_modes"]


def with_continue_modes(plan: Plan, config: Config) -> Plan:
    """``plan`` with each phase's mode as ``--continue`` applies it."""
    phases = {p.name: p for p in ordered_phases(registries())}
    return attrs.evolve(plan, phases=tuple(
        attrs.evolve(p, mode=run_mode(config, phases[p.phase], continue_run=True)) if p.phase in phases else p
        for p in plan.phases
    ))
