"""The run order of the registered phases: the standard five, then each plugin phase after
the phases it names in ``after`` (shared by the config loader, the planner, the runner and
the batch fetcher). Which of them one run goes through is :mod:`coeval.phases.run_selection`'s."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from coeval.phase_ids import STANDARD_PHASE_IDS as PHASE_IDS

__all__ = ["ordered_phases"]


class _Registered(Protocol):
    """One registration (an entry of a registry): the phase object is its ``value``."""

    @property
    def value(self) -> Any: ...


class HasPhases(Protocol):
    """What is read of the registries here: the registered phases
    (:class:`coeval.contract.registries.Registries` has them)."""

    @property
    def phases(self) -> Iterable[_Registered]: ...


def ordered_phases(registries: HasPhases) -> list[Any]:
    """Registered phases in run order: the standard five first, others after what they
    name in ``after`` (registration order otherwise)."""
    entries = [e.value for e in registries.phases]
    standard = sorted((p for p in entries if p.name in PHASE_IDS), key=lambda p: PHASE_IDS.index(p.name))
    others = [p for p in entries if p.name not in PHASE_IDS]
    ordered = list(standard)
    placed = {p.name for p in ordered}
    known = {p.name for p in entries}
    while others:
        progress = False
        for p in list(others):
            if all(dep in placed or dep not in known for dep in getattr(p, "after", ())):
                # right after the last phase it depends on
                deps = [i for i, q in enumerate(ordered) if q.name in getattr(p, "after", ())]
                ordered.insert(max(deps) + 1 if deps else len(ordered), p)
                placed.add(p.name)
                others.remove(p)
                progress = True
        if not progress:  # a cycle: run the rest at the end, in registration order
            ordered += others
            break
    return ordered
