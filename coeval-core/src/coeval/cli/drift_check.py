"""``coeval run --continue``: stop before mixing two configurations under one run name."""

from __future__ import annotations

import click

from coeval.cli.errors import UserError
from coeval.config.model import Config
from coeval.drift import describe, find_drift, record_allowed_drift
from coeval.kept_artifacts import not_applied
from coeval.shrink import find_shrink
from coeval.storage.run_folder import RunFolder

__all__ = ["check_drift"]


def check_drift(config: Config, *, allow_drift: bool, dry_run: bool, whole: Config | None = None) -> None:
    """Raise a :class:`UserError` (exit 2) naming each changed setting, unless allowed.

    ``whole``: the config before ``--limit``/``--tasks``/``--models`` (a slice is no
    shrink); what it leaves out of the run's records is drift too. With ``allow_drift`` the
    changes are recorded in ``meta.json`` (not on a dry run).
    """
    run = RunFolder.for_experiment(config.experiment.storage_folder, config.experiment.id)
    if not run.exists():
        return
    meta = run.read_meta()
    changes = find_drift(meta.get("settings"), config) + find_shrink(run, meta, whole or config)
    if not changes:
        return
    lines = "\n    ".join(describe(c) for c in changes)
    if not allow_drift:
        raise UserError(
            f"{run.root}: the config changed settings this run already used; resuming would mix two "
            f"configurations under one name:\n    {lines}",
            hint="restore the old values, use a new experiment.id, or pass --allow-drift to continue "
            "anyway (the change is recorded in meta.json)",
        )
    ignored = [c for c in changes if not_applied(run, c)]
    applied = [c for c in changes if c not in ignored]
    for c in ignored:  # the run keeps its own artifact: the edit is not applied, nor recorded
        click.secho(f"warning: {describe(c)}: not applied, the run keeps its own {c.setting.split('.')[0]} "
                    "(start a new experiment id to use the new one)", fg="yellow", err=True)
    if not applied:
        return
    lines = "\n    ".join(describe(c) for c in applied)
    click.secho(f"warning: continuing with changed settings (--allow-drift):\n    {lines}", fg="yellow", err=True)
    if not dry_run:
        record_allowed_drift(run, applied)
