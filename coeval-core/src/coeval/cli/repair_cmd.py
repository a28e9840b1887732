"""``coeval repair``: fix truncated lines, duplicates, orphans and failed records of a run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.table import Table

from coeval.cli.errors import UserError, user_errors
from coeval.cli.verbosity import info
from coeval.console import output_console
from coeval.plugins.manager import registries
from coeval.run.repair import repair_run
from coeval.storage.listing import storage_folder_hint
from coeval.storage.lock import RunFolderBusyError, RunLock
from coeval.storage.run_folder import RunFolder
from coeval.storage.safe_files import UnsafeRunFile

if TYPE_CHECKING:
    from coeval.run.repair import RepairReport
    from coeval.storage.run_folder import RunFolder


@click.command("repair")
@click.option("--run", "run_path", required=True, metavar="PATH", help="The run folder (storage_folder/experiment_id).")
@click.option("--dry-run", is_flag=True, help="Report what would be fixed; change nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@user_errors
def command(run_path: str, dry_run: bool, as_json: bool) -> None:
    """Make a damaged run folder whole again, so `coeval run --continue` completes it.

    Drops lines that do not parse, records without an id, older duplicates of an id,
    failed and empty records (they are made again under the same id), and orphans
    (responses to missing datapoints, evaluations of missing responses); removes failed
    phase 1-2 proposals; reopens every phase from the first one with a gap. Files are
    rewritten atomically, under the run folder's lock.
    """
    run = open_run_folder(run_path)
    lock = RunLock(run.root, shared=False)
    try:
        if not dry_run:
            lock.acquire()
        report = repair_run(run, registries=registries(), dry_run=dry_run)
    except RunFolderBusyError as exc:
        raise UserError(str(exc), "wait for the run to finish, then repair") from None
    except UnsafeRunFile as exc:  # a FIFO or an outside link among the run's files: the file and the rule
        raise UserError(str(exc)) from None
    except OSError as exc:  # a read-only folder, a full disk: one line, and nothing half-written
        where = f" {exc.filename}" if exc.filename else ""
        raise UserError(f"cannot repair {run.root}: cannot write{where}: {exc.strerror or exc}",
                        "fix the cause (permissions, free disk space) and run `coeval repair` again; every file "
                        "is replaced whole, so the run is as it was or repaired") from None
    finally:
        lock.release()
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
        return
    _print(report)


def open_run_folder(run_path: str) -> RunFolder:
    """The run folder at ``run_path``, or a UserError saying why it is not one."""
    root = Path(run_path)
    if not root.is_dir():
        raise UserError(f"{root}: no such run folder", "pass --run storage_folder/experiment_id")
    run = RunFolder(root)
    if not run.meta_path.exists() and not any((root / d).is_dir() for d in ("phase3_datapoints", "phase1_attributes")):
        raise UserError(f"{root}: not a CoEval run folder (no meta.json, no phase folders)",
                        storage_folder_hint(root) or "pass --run storage_folder/experiment_id")
    return run


def _print(report: RepairReport) -> None:
    console = output_console(soft_wrap=True)
    verb = "would fix" if report.dry_run else "fixed"
    totals = report.totals()
    if not report.changed:
        console.print(f"{report.run}: nothing to repair ({totals['kept']} records checked).")
        return
    table = Table(title=f"coeval repair: {report.run}" + (" (dry run)" if report.dry_run else ""))
    for col in ("file", "lines", "kept", "bad lines", "no id", "duplicates", "failed", "orphans"):
        table.add_column(col, justify="left" if col == "file" else "right")
    for f in report.files:
        if f.changed:
            table.add_row(Path(f.path).name, str(f.lines), str(f.kept), str(f.bad_lines), str(f.no_id),
                          str(f.duplicates), str(f.failed), str(f.orphans))
    table.add_row("total", *(str(totals[k]) for k in ("lines", "kept", "bad_lines", "no_id", "duplicates",
                                                       "failed", "orphans")), style="bold")
    console.print(table)
    if report.failures_by_cause:
        causes = ", ".join(f"{k}: {v}" for k, v in report.failures_by_cause.most_common())
        console.print(f"failed records by cause: {causes}")
    for path in report.removed_files:
        console.print(f"{verb}: removed {path}")
    if report.meta_rebuilt:
        console.print(f"{verb}: meta.json was unreadable and is rebuilt")
    for field in report.meta_fields_fixed:
        console.print(f"{verb}: meta.json field {field}: rebuilt")
    if report.ledger_lines_dropped:
        console.print(f"{verb}: dropped {report.ledger_lines_dropped} unreadable lines of calls.jsonl")
    if report.ledger_calls_settled:
        console.print(f"{verb}: {report.ledger_calls_settled} calls a stopped process left open counted as made, "
                      "at their estimated cost")
    if report.counts_reconciled:
        console.print(f"{verb}: meta.json's calls and spend set to what calls.jsonl counts")
    if report.phases_reopened:
        console.print(f"{verb}: reopened phases {', '.join(report.phases_reopened)}")
    if report.dry_run:
        info("Dry run: nothing changed. Run without --dry-run to apply.")
    else:
        info("next: coeval run --config <your config> --continue")
