"""``coeval run --continue``: stop before mixing two configurations under one run name."""

from __future__ import annotations

from typing import Any

import click

from coeval.cli.errors import UserError
from coeval.config.model import Config
from coeval.phases.base import PhaseError
from coeval.run.data_drift import apply_row_plans, data_row_plans, row_changes
from coeval.run.drift import Change, describe, find_drift, record_allowed_drift
from coeval.run.kept_artifacts import not_applied
from coeval.run.shrink import find_shrink
from coeval.storage.run_folder import RunFolder

__all__ = ["check_drift"]

#: what a model in each role has done once it wrote a record, and where those records are
_DID = {"teacher": "written", "student": "answered", "judge": "judged"}
_RECORDS = {"teacher": ("phase3_datapoints", "datapoints"), "student": ("phase4_responses", "responses"),
            "judge": ("phase5_evaluations", "evaluations")}
_NOT_YET = " (recorded when the run started; {name} has not {did} anything yet)"


def _role(change: Change) -> str:
    return change.setting.split(".", 1)[0]


def _used(run: RunFolder, change: Change) -> bool:
    """Whether records already written came from this setting: a model's setting in a role
    it has written no record in yet was only recorded when the run started. Task settings,
    and a teacher once phase 1 or 2 wrote anything, count as used."""
    if change.kind != "model" or _role(change) not in _RECORDS:
        return True
    folder, kind = _RECORDS[_role(change)]
    if any(p.stat().st_size for p in (run.root / folder).glob(f"*.{change.name}.{kind}.jsonl")):
        return True
    early = ("phase1_attributes", "phase2_rubric")
    return _role(change) == "teacher" and any(any((run.root / d).glob("*")) for d in early if (run.root / d).is_dir())


def _allowed_before(meta: dict[str, Any], change: Change) -> bool:
    """Whether ``--allow-drift`` already let this very shrink through (``meta.json``'s
    ``drift``): what it leaves out stays left out, and is not asked about again."""
    seen = {"kind": change.kind, "name": change.name, "setting": change.setting, "old": change.old, "new": change.new}
    return any(isinstance(entry, dict) and seen in (entry.get("changes") or [])
               for entry in meta.get("drift") or [])


def check_drift(config: Config, *, allow_drift: bool, dry_run: bool, whole: Config | None = None) -> None:
    """Raise a :class:`UserError` (exit 2) naming each changed setting, unless allowed.

    ``whole``: the config before ``--limit``/``--tasks``/``--models`` (a slice is no
    shrink); what it leaves out of the run's records is drift too. So are the edited and
    removed rows of a task's data file (:mod:`coeval.run.data_drift`); rows added or moved
    are not, and are applied at once. With ``allow_drift`` the changes are recorded in
    ``meta.json`` (not on a dry run).
    """
    run = RunFolder.for_experiment(config.experiment.storage_folder, config.experiment.id)
    if not run.exists():
        return
    meta = run.read_meta()
    shrink = [c for c in find_shrink(run, meta, whole or config) if not _allowed_before(meta, c)]
    try:
        plans = data_row_plans(run, meta, config)
    except PhaseError as exc:
        raise UserError(str(exc)) from None
    changes = find_drift(meta.get("settings"), config) + shrink + row_changes(plans)
    if not changes:
        if not dry_run:
            apply_row_plans(run, plans)  # rows added or moved: no drift, but phase 3 has rows to write
        return
    unused = {c for c in changes if not _used(run, c)}
    lines = "\n    ".join(describe(c) + (_NOT_YET.format(name=c.name, did=_DID[_role(c)]) if c in unused else "")
                           for c in changes)
    what = "recorded when this run started" if len(unused) == len(changes) else "this run already used"
    if not allow_drift:
        raise UserError(
            f"{run.root}: the config changed settings {what}; resuming would mix two "
            f"configurations under one name:\n    {lines}",
            hint="restore the old values, use a new experiment.id, or pass --allow-drift to continue "
            "anyway (the change is recorded in meta.json)",
        )
    ignored = [c for c in changes if not_applied(run, c)]
    applied = [c for c in changes if c not in ignored]
    for c in ignored:  # the run keeps its own artifact: the edit is not applied, nor recorded
        click.secho(f"warning: {describe(c)}: not applied, the run keeps its own {c.setting.split('.')[0]} "
                    "(start a new experiment id to use the new one)", fg="yellow", err=True)
    if not dry_run:
        apply_row_plans(run, plans)
    if not applied:
        return
    lines = "\n    ".join(describe(c) for c in applied)
    click.secho(f"warning: continuing with changed settings (--allow-drift):\n    {lines}", fg="yellow", err=True)
    if not dry_run:
        record_allowed_drift(run, applied)
