"""What the run's config snapshot leaves out of its records (after ``--allow-drift``): the
records of a removed model, or of a role taken from it, and the datapoints above a lowered
``sampling.total`` or whose rows left their task's data file, with their answers and
judgments. They stay on disk, and status and analysis both leave them out."""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from coeval.config.model import SamplingConfig
from coeval.phases.data_rows import left_out_ids
from coeval.plugins.manager import registries
from coeval.record_schema import (
    DATAPOINT_ID,
    JUDGE_MODEL_ID,
    RESPONSE_ID,
    STUDENT_MODEL_ID,
    TASK_ID,
    TEACHER_MODEL_ID,
)
from coeval.run.limits import LIMIT_KEY
from coeval.storage.records import above_slots

from coeval_analysis.loading.run_data import DataQuality

__all__ = ["above_total", "leave_out_above_total", "leave_out_removed", "left_out_by_config", "slots_by_config",
           "without_datapoints", "without_models"]

_ROLE_FIELD = {"teacher": TEACHER_MODEL_ID, "student": STUDENT_MODEL_ID, "judge": JUDGE_MODEL_ID}


def left_out_by_config(meta: dict[str, Any], config: dict[str, Any]) -> dict[str, set[str]]:
    """role -> models that made records in that role (``meta.json`` settings) but that the
    run's config snapshot no longer has in it (removed, or the role taken away, and let
    through with ``--allow-drift``): their records stay on disk, and status and analysis
    both leave them out."""
    recorded = (meta.get("settings") or {}).get("models") if isinstance(meta.get("settings"), dict) else None
    models = config.get("models")
    if not isinstance(recorded, dict) or not recorded or not isinstance(models, list):
        return {}
    current = {str(m.get("name")): {str(r) for r in (m.get("roles") or [])} for m in models if isinstance(m, dict)}
    out: dict[str, set[str]] = {}
    for name, entry in recorded.items():
        roles = entry.get("roles") if isinstance(entry, dict) else None
        for role in roles or ():
            if role in _ROLE_FIELD and role not in current.get(str(name), set()):
                out.setdefault(role, set()).add(str(name))
    return out


def without_models(table: pa.Table, left_out: dict[str, set[str]]) -> tuple[pa.Table, int]:
    """``table`` less the rows made by a left-out model in its left-out role, and how many."""
    drop = None
    for role, names in left_out.items():
        field = _ROLE_FIELD[role]
        if field not in table.column_names or not names:
            continue
        hit = pc.fill_null(pc.is_in(table.column(field), value_set=pa.array(sorted(names), pa.string())), False)
        drop = hit if drop is None else pc.or_(drop, hit)
    if drop is None:
        return table, 0
    n = int(pc.sum(drop).as_py() or 0)
    return (table.filter(pc.invert(drop)), n) if n else (table, 0)


def leave_out_removed(
    ev: pa.Table, meta: dict[str, Any], config: dict[str, Any], quality: DataQuality
) -> tuple[pa.Table, dict[str, set[str]]]:
    """The evaluation records less those of models the config snapshot left out (counted in
    ``quality``), and what was left out, for the other phases' records."""
    left_out = left_out_by_config(meta, config)
    ev, quality.n_left_out_by_config = without_models(ev, left_out)
    quality.left_out_models = {role: sorted(names) for role, names in sorted(left_out.items())}
    return ev, left_out


def _total_of(task: dict[str, Any], meta: dict[str, Any]) -> int | None:
    """The task's ``sampling.total`` in the snapshot, or its full total when a ``--limit`` run
    recorded one (``meta.json``'s ``limit``, as status reads it); None when not a number."""
    sampling, limit = task.get("sampling"), meta.get(LIMIT_KEY)
    total = sampling.get("total", SamplingConfig().total) if isinstance(sampling, dict) else SamplingConfig().total
    full = limit.get("full_totals") if isinstance(limit, dict) else None
    full = full if isinstance(full, dict) else {}
    known = [t for t in (total, full.get(str(task.get("name")))) if isinstance(t, int) and not isinstance(t, bool)]
    return max(known) if known else None


def slots_by_config(meta: dict[str, Any], config: dict[str, Any], target_attrs: dict[str, dict[str, list[str]]]
                    ) -> dict[tuple[str, str], int]:
    """(task, teacher) -> slots of the snapshot's teachers that write by slot, as the run counts
    them (:func:`coeval.phases.generation.slot_counts`): ``sampling.total``, or the whole
    cross-product for ``target_attributes: complete``. Tasks with their own ``data`` and
    teachers on a virtual interface (a benchmark, ``coeval ingest``) have none."""
    facts = registries()
    models = [m for m in config.get("models") or [] if isinstance(m, dict)]
    teachers = [str(m.get("name")) for m in models if "teacher" in (m.get("roles") or [])
                and not getattr(facts.interface_facts(str(m.get("interface"))), "virtual_teacher", False)]
    out: dict[tuple[str, str], int] = {}
    for task in config.get("tasks") or []:
        if not isinstance(task, dict) or task.get("data") is not None:
            continue
        name, total = str(task.get("name")), _total_of(task, meta)
        if total is None:
            continue
        if task.get("target_attributes") == "complete":
            values = [[v for v in vs if v.strip()] for vs in (target_attrs.get(name) or {}).values()]
            total = max(total, math.prod(len(vs) for vs in values if vs) if any(values) else 0)
        out.update({(name, teacher): total for teacher in teachers})
    return out


def above_total(dps: pa.Table, slots: dict[tuple[str, str], int]) -> tuple[set[str], dict[str, dict[str, int]]]:
    """Ids of the datapoints above the slots of their (task, teacher) (a lowered
    ``sampling.total``), and how many per task and teacher."""
    ids: set[str] = set()
    counts: dict[str, dict[str, int]] = {}
    if not slots or dps.num_rows == 0:
        return ids, counts
    for dp, task, teacher in zip(dps.column("id").to_pylist(), dps.column(TASK_ID).to_pylist(),
                                 dps.column(TEACHER_MODEL_ID).to_pylist(), strict=True):
        if dp is not None and above_slots(slots, str(task), str(teacher), str(dp)) and str(dp) not in ids:
            ids.add(str(dp))
            per = counts.setdefault(str(task), {})
            per[str(teacher)] = per.get(str(teacher), 0) + 1
    return ids, counts


def _add_rows_gone(dps: pa.Table, gone: frozenset[str], ids: set[str], counts: dict[str, dict[str, int]]) -> None:
    """Add to ``ids`` and ``counts`` the datapoints whose rows left their task's data file
    (``meta.json``'s ``data_rows_left_out``, let through with ``--allow-drift``)."""
    if not gone or dps.num_rows == 0:
        return
    for dp, task, teacher in zip(dps.column("id").to_pylist(), dps.column(TASK_ID).to_pylist(),
                                 dps.column(TEACHER_MODEL_ID).to_pylist(), strict=True):
        if dp is not None and str(dp) in gone and str(dp) not in ids:
            ids.add(str(dp))
            per = counts.setdefault(str(task), {})
            per[str(teacher)] = per.get(str(teacher), 0) + 1


def without_datapoints(ev: pa.Table, resp: pa.Table, dps: pa.Table, ids: set[str]
                       ) -> tuple[pa.Table, pa.Table, pa.Table, int]:
    """The three phases' records less those of the datapoints ``ids`` (answers and judgments
    included: a judgment is found by its datapoint or by its answer), and how many judgments."""
    if not ids:
        return ev, resp, dps, 0
    left = pa.array(sorted(ids), pa.string())

    def hit(table: pa.Table, field: str, values: pa.Array) -> pa.ChunkedArray:
        return pc.fill_null(pc.is_in(table.column(field), value_set=values), False)

    dps = dps.filter(pc.invert(hit(dps, "id", left)))
    resp_hit = hit(resp, DATAPOINT_ID, left)
    answers = pa.array(sorted({str(r) for r in resp.filter(resp_hit).column("id").to_pylist() if r is not None}),
                       pa.string())
    resp = resp.filter(pc.invert(resp_hit))
    ev_hit = pc.or_(hit(ev, DATAPOINT_ID, left), hit(ev, RESPONSE_ID, answers))
    n = int(pc.sum(ev_hit).as_py() or 0)
    return ev.filter(pc.invert(ev_hit)), resp, dps, n


def leave_out_above_total(
    tables: tuple[pa.Table, pa.Table, pa.Table], meta: dict[str, Any], config: dict[str, Any],
    target_attrs: dict[str, dict[str, list[str]]], quality: DataQuality,
) -> tuple[pa.Table, pa.Table, pa.Table]:
    """The (evaluation, response, datapoint) records less those of the datapoints above a
    lowered ``sampling.total`` (counted in ``quality``), as status leaves them out."""
    ev, resp, dps = tables
    above, quality.left_out_datapoints = above_total(dps, slots_by_config(meta, config, target_attrs))
    _add_rows_gone(dps, left_out_ids(meta), above, quality.left_out_datapoints)
    ev, resp, dps, n_above = without_datapoints(ev, resp, dps, above)
    quality.n_left_out_by_config += n_above
    return ev, resp, dps
