"""A config that leaves out part of what a run already holds: a model removed, a role taken
from a model, a lower ``sampling.total``. ``--continue`` treats it as drift, since the run
folder would hold records its config no longer describes (status would count one set and
analysis rank another). Each change names what stays on disk and what the config leaves out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from coeval.config.model import Config
from coeval.phase_ids import DATA_GENERATION, RECORD_PHASES, ROLES
from coeval.phases.base import RunView
from coeval.phases.generation import beyond_slots, slot_counts
from coeval.plugins.manager import registries
from coeval.record_schema import ID, JUDGE_MODEL_ID, STUDENT_MODEL_ID, TASK_ID, TEACHER_MODEL_ID
from coeval.run.drift import Change
from coeval.storage.records import datapoint_slot, load_phase_records
from coeval.storage.run_folder import RunFolder

__all__ = ["find_shrink"]

_ROLE_FIELD = {"teacher": TEACHER_MODEL_ID, "student": STUDENT_MODEL_ID, "judge": JUDGE_MODEL_ID}


def _records_by(run: RunFolder, dropped: set[tuple[str, str]]) -> dict[str, Counter[str]]:
    """role -> model -> records that model made in that role, for the (role, model) pairs
    ``dropped`` only: a run of millions of records is read only when a role was dropped."""
    out: dict[str, Counter[str]] = {role: Counter() for role in _ROLE_FIELD}
    for phase, role in ((phase, ROLES[phase]) for phase in RECORD_PHASES):
        names = {name for r, name in dropped if r == role}
        if not names:
            continue
        for rec in load_phase_records(run, phase).values():
            if (name := str(rec.get(_ROLE_FIELD[role]))) in names:
                out[role][name] += 1
    return out


def find_shrink(run: RunFolder, meta: Mapping[str, Any], config: Config) -> list[Change]:
    """What ``config`` leaves out of the run's records (none for a run without settings)."""
    recorded = (meta.get("settings") or {}).get("models") or {}
    if not recorded:
        return []
    current = {m.name: set(m.roles) for m in config.models}
    dropped = {(role, name) for name, entry in recorded.items() if isinstance(entry, Mapping)
               for role in (entry.get("roles") or {}) if role not in current.get(name, set())}
    made = _records_by(run, dropped)
    changes: list[Change] = []
    for name, entry in sorted(recorded.items()):
        roles = sorted((entry.get("roles") or {}) if isinstance(entry, Mapping) else {})
        for role in roles:
            n = made.get(role, Counter())[name]
            if not n or role in current.get(name, set()):
                continue
            what = "removed from the config" if name not in current else f"no longer a {role}"
            changes.append(Change("model", name, f"roles.{role}", f"{n} records as {role}",
                                  f"{what}: its {n} records stay on disk, left out of status and analysis"))
    changes.extend(_above_total(run, config))
    return changes


def _above_total(run: RunFolder, config: Config) -> list[Change]:
    """Per (task, teacher), the datapoints above the config's slots (a lower ``sampling.total``):
    they stay on disk, and the run, status and analysis leave them out with their answers and
    judgments. Ingested datapoints and those of a task's own data are not counted in slots."""
    view = RunView(config, run, registries())
    slots = slot_counts(view)
    datapoints = list(load_phase_records(run, DATA_GENERATION).values())
    above = beyond_slots(view, datapoints, slots)
    by_group: dict[tuple[str, str], list[str]] = {}
    for dp in datapoints:
        by_group.setdefault((str(dp.get(TASK_ID)), str(dp.get(TEACHER_MODEL_ID))), []).append(str(dp.get(ID, "")))
    changes: list[Change] = []
    for (task, teacher), limit in slots.items():
        mine = by_group.get((task, teacher), [])
        left = sorted(i for i in mine if i in above)
        if not left:
            continue
        most = max(s for i in mine if (s := datapoint_slot(i)) is not None)
        shown = ", ".join(left[:3]) + (f", ... ({len(left)} in all)" if len(left) > 3 else "")
        changes.append(Change("task", task, "sampling.total", f"{most} datapoints of {teacher}",
                              f"{limit}: {len(left)} datapoints of {teacher} above it ({shown}) stay on disk with "
                              "their answers and judgments, left out of status and analysis"))
    return changes
