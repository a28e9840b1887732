"""What the run's config snapshot leaves out of its records (after ``--allow-drift``): the
records stay on disk, and status and analysis both leave them out."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from coeval_analysis.data import DataQuality

__all__ = ["left_out_by_config"]

_ROLE_FIELD = {"teacher": "teacher_model_id", "student": "student_model_id", "judge": "judge_model_id"}


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


def _without_models(table: pa.Table, left_out: dict[str, set[str]]) -> tuple[pa.Table, int]:
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


def _leave_out_removed(
    ev: pa.Table, meta: dict[str, Any], config: dict[str, Any], quality: DataQuality
) -> tuple[pa.Table, dict[str, set[str]]]:
    """The evaluation records less those of models the config snapshot left out (counted in
    ``quality``), and what was left out, for the other phases' records."""
    left_out = left_out_by_config(meta, config)
    ev, quality.n_left_out_by_config = _without_models(ev, left_out)
    quality.left_out_models = {role: sorted(names) for role, names in sorted(left_out.items())}
    return ev, left_out
