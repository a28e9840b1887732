"""``coeval status``: where a run stands, read from its folder alone (no calls)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from coeval.cli.config_arg import run_path_from
from coeval.cli.errors import UserError, user_errors
from coeval.cli.lane_table import lanes_table
from coeval.cli.repair_cmd import open_run_folder
from coeval.cli.status_expected import with_planned_totals
from coeval.cli.status_verdict import survey_verdict
from coeval.cli.verbosity import command_logging, verbosity, verbosity_options
from coeval.config.credentials import KeyStore
from coeval.config.phase_order import ordered_phases
from coeval.console import output_console
from coeval.console.text import plain, safe_tree
from coeval.phase_ids import RECORD_PHASES
from coeval.phases.base import RunView
from coeval.phases.evaluation_rounds import adaptive_lines
from coeval.planning.call_figures import call_figures, figures_table
from coeval.planning.cost.against import against_table, estimate_against_actual
from coeval.planning.cost.report import read_estimate
from coeval.planning.ingested import merge_ingested
from coeval.plugins.config_loading import read_config_snapshot
from coeval.plugins.manager import registries as _registries
from coeval.quality import rejections
from coeval.record_schema import ERROR, EVALUATED_AT, GENERATED_AT, ID
from coeval.run.batch_fetch import FetchError, fetch_pending_batches
from coeval.run.lane_figures import read_lanes
from coeval.run.limits import LIMIT_KEY, full_config, limit_note
from coeval.scheduler.batching.pending import PendingStore
from coeval.shipped_interfaces import INGEST_BENCHMARK_FIELD
from coeval.storage import iter_jsonl
from coeval.storage.call_ledger import LedgerError, ledger_path, read_ledger
from coeval.storage.lock import folder_in_use
from coeval.storage.meta_check import BadRunFile, check_meta
from coeval.storage.record_inputs import stale_note, stale_records
from coeval.storage.records import load_phase_records, record_status
from coeval.storage.run_folder import RunFolder

if TYPE_CHECKING:
    from coeval.config.model import Config
    from coeval.plugins.manager import Registries

__all__ = ["collect_status", "command"]


def _scan_files(run: Any, phase: str) -> dict[str, int]:
    """Lines, records, unreadable lines and duplicate ids of a phase's JSONL files."""
    files = run.jsonl_files(phase)
    out = {"files": len(files), "lines": 0, "bad_lines": 0, "duplicate_ids": 0}
    seen: set[str] = set()

    def unreadable(_lineno: int, _text: str) -> None:
        out["lines"] += 1
        out["bad_lines"] += 1

    for path in files:
        for rec in iter_jsonl(path, on_bad_line=unreadable):
            out["lines"] += 1
            rid = rec.get(ID)
            if not isinstance(rid, str):
                out["bad_lines"] += 1
            elif rid in seen:
                out["duplicate_ids"] += 1
            else:
                seen.add(rid)
    return out


def _recent_errors(run: Any, limit: int = 5) -> list[dict[str, str]]:
    errors: list[dict[str, str]] = []
    for phase in RECORD_PHASES:
        for rec in load_phase_records(run, phase).values():
            if record_status(rec) == "failed":
                errors.append({"phase": phase, "id": str(rec.get(ID)), "error": str(rec.get(ERROR) or "failed"),
                               "at": str(rec.get(GENERATED_AT) or rec.get(EVALUATED_AT) or "")})
    errors.sort(key=lambda e: e["at"])
    return errors[-limit:]


def _pending_batches(run: Any, notes: list[str]) -> list[dict[str, Any]]:
    """Jobs in ``pending_batches.json`` (also the legacy ``{batch_id: {...}}`` form)."""
    store = PendingStore(run)
    try:
        jobs = [
            {k: v for k, v in job.to_dict().items() if k != "items"} for job in store.load()
        ]
    except ValueError as exc:
        notes.append(str(exc))
        return []
    if not jobs and store.path.exists():
        try:
            raw = json.loads(store.path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            raw = None
        if isinstance(raw, dict) and "jobs" not in raw:
            for job_id, info in raw.items():
                if isinstance(info, dict) and info.get("status") not in ("collected", "done"):
                    jobs.append({"job_id": job_id, "interface": info.get("interface"), "phase": info.get("phase"),
                                 "state": info.get("status"), "requests": info.get("n_requests"),
                                 "submitted_at": info.get("submitted_at")})
    return jobs


def collect_status(run_path: str | Path, registries: Registries | None = None) -> dict[str, Any]:
    """Everything ``coeval status`` shows, as plain data (``--json`` prints it)."""
    run = RunFolder(run_path)
    notes: list[str] = []
    meta = _read_meta(run, notes)
    config = _full_config(run, meta, notes)
    if registries is None:
        registries = _registries()
    active = folder_in_use(run.root)
    run_status = _process_status(meta, active, notes)
    phases, failures = _phase_entries(run, config, registries, meta, active, notes)
    run_status = _status_from_phases(run_status, phases, meta, config, registries, notes)
    stale = stale_records(run, {t.name for t in config.tasks} if config is not None else None)
    if stale:
        notes.insert(0, stale_note(stale))
        if run_status == "completed":
            run_status = "incomplete (stale records)"
    models = _model_rows(meta, config)
    budget = config.experiment.budget_usd if config is not None else None
    total_spend = round(sum(float(v) for v in (meta.get("spend_usd") or {}).values()), 6)
    estimated = read_estimate(run.root)
    estimate = _estimate_beside_spend(estimated, models)
    figures = call_figures(run)
    against = estimate_against_actual(estimated, meta, figures) if estimated is not None else None
    return {
        "run": str(run.root),
        "experiment_id": meta.get("experiment_id"),
        "status": run_status,
        "limit": meta.get(LIMIT_KEY),  # a --limit slice: datapoints per (task, teacher) and full totals
        "active": active,
        "created_at": meta.get("created_at"),
        "updated_at": meta.get("updated_at"),
        "forked_from": (meta.get("forked_from") or {}).get("path"),
        "phases": phases,
        "failures_by_cause": dict(failures),
        "rejected_items": rejections(meta),
        "models": models,
        "call_figures": figures,
        "lanes": read_lanes(run.root)["phases"],
        "spend_usd": total_spend,
        "budget_usd": budget,
        "budget_reached": budget is not None and total_spend >= budget,
        "estimate": estimate,
        "estimate_vs_actual": against,  # {calls|input_tokens|output_tokens|cost_usd|seconds: {estimated, actual}}
        "pending_batches": _pending_batches(run, notes),
        "recent_errors": _recent_errors(run),
        "notes": notes,
        **({"stale_records": dict(stale)} if stale else {}),
        **({"adaptive": meta["adaptive"]} if isinstance(meta.get("adaptive"), dict) else {}),
    }


def _full_config(run: RunFolder, meta: dict[str, Any], notes: list[str]) -> Config | None:
    """The run's config as its snapshot keeps it, with a ``--limit`` slice's full totals and
    the ingested tasks; None (and a note) without a readable snapshot."""
    config = read_config_snapshot(run)
    if config is None:
        notes.append("no readable config.yaml: expected counts are unknown, only records are shown")
        return None
    return merge_ingested(full_config(config, meta), meta)


def _process_status(meta: dict[str, Any], active: bool, notes: list[str]) -> str:
    """The run's status as ``meta.json`` records it, or ``stopped`` when no process runs a
    run it says is in progress."""
    run_status: str = meta.get("status") or "unknown (meta.json is missing or unreadable; `coeval repair` rebuilds it)"
    if run_status == "in_progress" and not active:
        run_status = "stopped (no process is running it; it crashed or was killed)"
        notes.append("resume it with `coeval run --config <your config> --continue`")
    return run_status


def _phase_entries(run: RunFolder, config: Config | None, registries: Registries, meta: dict[str, Any],
                   active: bool, notes: list[str]) -> tuple[list[dict[str, Any]], Counter[str]]:
    """Each phase's survey, state and record files, in run order; the failures by cause."""
    completed = set(meta.get("phases_completed") or [])
    limited = bool(meta.get(LIMIT_KEY))  # a --limit slice completed those phases, not the experiment
    in_progress = set(meta.get("phases_in_progress") or [])
    phases = []
    failures: Counter[str] = Counter()
    first_gap: str | None = None
    for phase in ordered_phases(registries):
        entry: dict[str, Any] = {"phase": phase.name, "recorded_complete": phase.name in completed}
        if config is not None:
            survey = phase.survey(RunView(config, run, registries))
            entry.update(survey.to_dict())
            failures.update(survey.failures)
            total = survey.total
            if survey.complete and (phase.name not in completed or limited) and first_gap is not None:
                # it expects nothing more only because an earlier phase has not produced it yet
                state = f"waiting for {first_gap}"
            elif survey.complete:
                state = "complete" if phase.name in completed else "complete (run --continue to record it)"
            elif phase.name in in_progress and active:
                state = "in progress"
            elif total.ok == 0 and total.failed == 0:
                state = "not started"
            else:
                state = "incomplete"
            entry["state"] = state
            if not survey.complete and first_gap is None:
                first_gap = phase.name
        else:
            entry["state"] = "complete" if phase.name in completed else "unknown"
        if phase.name in RECORD_PHASES:
            entry["files"] = _scan_files(run, phase.name)
            if entry["files"]["bad_lines"] or entry["files"]["duplicate_ids"]:
                notes.append(f"{phase.name}: unreadable lines or duplicate ids; `coeval repair` cleans them")
        phases.append(entry)
    return phases, failures


def _status_from_phases(run_status: str, phases: list[dict[str, Any]], meta: dict[str, Any], config: Config | None,
                        registries: Registries, notes: list[str]) -> str:
    """The run's status once its phases are surveyed: a ``--limit`` slice is partial, gaps
    the records show make it incomplete, and so does an interrupted ingest."""
    if run_status == "completed" and limit_note(meta.get(LIMIT_KEY)) and any(
            not p["state"].startswith("complete") for p in phases):
        run_status = f"partial ({limit_note(meta.get(LIMIT_KEY))})"
        notes.append("the rest: `coeval run --config <your config> --continue` (without --limit)")
    if config is not None:
        with_planned_totals(phases, config, registries)  # while an earlier phase is short: the plan's totals
    run_status, gap_note = survey_verdict(run_status, phases)  # gaps the records show, limit or not
    if gap_note:
        notes.append(gap_note)
    for entry in meta.get("ingest_log") or []:
        if isinstance(entry, dict) and entry.get("complete") is False:
            notes.insert(0, f"ingest of {entry.get(INGEST_BENCHMARK_FIELD)} into task {entry.get('task_name')} was interrupted; "
                            "run the same `coeval ingest` again to finish it (`--continue` answers the rows written)")
            if run_status in ("completed", "incomplete"):
                run_status = "incomplete (ingest interrupted)"
    return run_status


def _model_rows(meta: dict[str, Any], config: Config | None) -> list[dict[str, Any]]:
    """Each model's calls against its quota, and its spend."""
    calls = meta.get("calls") or {}
    spend = meta.get("spend_usd") or {}
    models = []
    names = [m.name for m in config.models] if config is not None else sorted(set(calls) | set(spend))
    for name in names:
        quota = config.experiment.quota.get(name) if config is not None else None
        max_calls = quota.max_calls if quota is not None else None
        models.append({
            "model": name,
            "calls": int(calls.get(name, 0)),
            "max_calls": max_calls,
            "quota_reached": max_calls is not None and int(calls.get(name, 0)) >= max_calls,
            "spend_usd": round(float(spend.get(name, 0.0)), 6),
        })
    return models


def _read_meta(run: RunFolder, notes: list[str]) -> dict[str, Any]:
    """``meta.json`` with its calls and spend as the call ledger counts them: a call a
    killed process had in flight counts (at its estimate) before any process reconciled it.
    A field of the wrong shape, or a malformed ledger line, raises (one error line, exit 2)."""
    try:
        meta = run.read_meta()
    except json.JSONDecodeError:
        meta = {}
        notes.append("meta.json cannot be read: run `coeval repair`")
    check_meta(meta, run.meta_path)
    path = ledger_path(run.root)
    if not (path.exists() or path.is_symlink()):
        return meta  # a run from before the ledger (a FIFO or a link in its place: refused by read_ledger)
    totals = read_ledger(path)
    return {**meta, "calls": {k: v for k, v in totals.calls.items() if v},
            "spend_usd": {k: v for k, v in totals.spend_by_model().items() if v}}


def _estimate_beside_spend(data: dict[str, Any] | None, models: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The run's ``cost_estimate.json`` (from ``--estimate-only`` / ``estimate_cost``, or kept
    by the run itself) summarised for comparison with the spend and calls in ``meta.json``."""
    if data is None:
        return None
    per_model = data.get("models") or {}
    for m in models:
        planned = per_model.get(m["model"]) or {}
        m["estimated_calls"] = planned.get("calls")
        m["estimated_usd"] = planned.get("cost_usd")
    return {
        "generated_at": data.get("generated_at"),
        "remaining_only": bool(data.get("remaining_only")),
        "total_calls": data.get("total_calls"),
        "total_cost_usd": data.get("total_cost_usd"),
    }


@click.command("status")
@click.option("--run", "run_path", metavar="PATH", help="The run folder (storage_folder/experiment_id).")
@click.option("--config", "config_path", metavar="PATH", help="Or the experiment YAML: its run folder is shown.")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.option("--fetch-batches", is_flag=True, help="Collect finished provider batch jobs into the run first.")
@click.option("--keys", metavar="PATH", help="Provider key file (for --fetch-batches).")
@verbosity_options
@user_errors
def command(run_path: str | None, config_path: str | None, as_json: bool, fetch_batches: bool,
            keys: str | None, quiet: bool, verbose: bool) -> None:
    """Show a run's progress: phase states, records vs expected per phase and model,
    failures by cause, calls against quotas, spend against the budget, pending batches
    and the latest errors. Reads the run folder only; makes no call.
    """
    with command_logging(verbosity(quiet, verbose)):
        run = open_run_folder(run_path_from(run_path, config_path))
        if fetch_batches:
            _fetch(run, keys)
        try:
            status = collect_status(run.root)
        except (BadRunFile, LedgerError) as exc:
            raise UserError(str(exc)) from None
    if as_json:
        click.echo(plain(json.dumps(status, indent=2, ensure_ascii=False)))  # C0 are JSON escapes; C1, bidi go
    elif quiet:
        click.echo(plain(f"{status['run']}: {status['status']}"))  # one line, for scripts
    else:
        _print(status)


def _fetch(run: Any, keys: str | None) -> None:
    """``--fetch-batches``: collect finished provider batch jobs into the run's records."""
    config = read_config_snapshot(run)
    if config is None:
        raise UserError(f"{run.config_path}: missing or unreadable, so batch results cannot be matched to items",
                        "run `coeval run --config <your config> --continue` instead")
    try:
        report = fetch_pending_batches(run, config, KeyStore.load(keys))
    except FetchError as exc:
        raise UserError(str(exc)) from None
    click.echo(report.summary(), err=True)
    for note in report.notes:
        click.echo(f"note: {note}", err=True)


def _print(status: dict[str, Any]) -> None:
    status = safe_tree(status)  # run text is untrusted: no control characters, markup escaped
    console = output_console(soft_wrap=True)
    console.print(f"[bold]{status['experiment_id'] or '?'}[/bold]  {status['run']}  status: {status['status']}"
                  + (f"  (forked from {status['forked_from']})" if status.get("forked_from") else ""))
    if status.get("stale_records"):  # first: the records below include them
        console.print(f"[bold]{status['notes'][0]}[/bold]", highlight=False)
    table = Table(title="phases")
    for col in ("phase", "state", "expected", "ok", "failed", "missing"):
        table.add_column(col, justify="left" if col in ("phase", "state") else "right")
    for p in status["phases"]:
        t = p.get("total", {})
        table.add_row(p["phase"], p["state"], *(str(t.get(k, "")) for k in ("expected", "ok", "failed", "missing")))
    console.print(table)
    groups = Table(title="records per model (per task in phases 1-2)")  # how each phase's survey groups them
    for col in ("phase", "model / task", "expected", "ok", "failed", "missing"):
        groups.add_column(col, justify="left" if col in ("phase", "model / task") else "right")
    for p in status["phases"]:
        for name, c in (p.get("groups") or {}).items():
            groups.add_row(p["phase"], name, *(str(c[k]) for k in ("expected", "ok", "failed", "missing")))
    if groups.row_count:
        console.print(groups)
    if status["failures_by_cause"]:
        causes = ", ".join(f"{k}: {v}" for k, v in sorted(status["failures_by_cause"].items(), key=lambda kv: -kv[1]))
        console.print(f"failed items by cause: {causes}  (fill with `coeval run --continue`)")
    for teacher, rules in sorted(status["rejected_items"].items()):
        console.print(f"rejected teacher replies, {teacher}: "
                      + ", ".join(f"{rule}: {n}" for rule, n in sorted(rules.items())))
    estimate = status.get("estimate")
    models = Table(title="calls and spend" + (" (estimate beside actual)" if estimate else ""))
    columns = ["model", "calls", "quota", "spend $"]
    if estimate:
        columns[2:2] = ["est. calls"]
        columns.append("est. $")
    for col in columns:
        models.add_column(col, justify="left" if col == "model" else "right")
    for m in status["models"]:
        quota = "" if m["max_calls"] is None else f"{m['max_calls']}" + (" reached" if m["quota_reached"] else "")
        row = [m["model"], str(m["calls"]), quota, f"{m['spend_usd']:.4f}"]
        if estimate:
            est_calls, est_usd = m.get("estimated_calls"), m.get("estimated_usd")
            row[2:2] = ["" if est_calls is None else str(est_calls)]
            row.append("" if est_usd is None else f"{est_usd:.4f}")
        models.add_row(*row)
    console.print(models)
    if status.get("call_figures"):
        console.print(figures_table(status["call_figures"]))
    if (lanes := lanes_table({"phases": status.get("lanes") or {}})) is not None:
        console.print(lanes)
    if estimate:
        scope = "remaining work" if estimate["remaining_only"] else "whole run"
        console.print(against_table(status.get("estimate_vs_actual") or {},
                                    f"estimated / actual ({scope}; estimated {estimate['generated_at']})"))
    if status["budget_usd"] is not None:
        reached = " (reached)" if status["budget_reached"] else ""
        console.print(f"spend ${status['spend_usd']:.4f} of budget ${status['budget_usd']:.4f}{reached}")
    if status["pending_batches"]:
        console.print(f"pending batches: {len(status['pending_batches'])}")
        for j in status["pending_batches"]:
            console.print(f"  {j.get('job_id')}  {j.get('model') or j.get('interface')}  {j.get('phase')}  "
                          f"{j.get('state')}  {j.get('requests')} requests")
    else:
        console.print("pending batches: none")
    if status["recent_errors"]:
        console.print("latest errors:")
        for e in status["recent_errors"]:
            console.print(f"  {e['phase']}  {e['id']}: {e['error']}")
    for line in adaptive_lines(status.get("adaptive")):  # what an adaptive run left out, and why
        console.print(line, markup=False, highlight=False)
    for note in status["notes"]:
        console.print(f"note: {note}")
