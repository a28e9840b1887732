"""``coeval repair``: make a damaged run folder whole again, so ``--continue`` completes it.

What it fixes, phase by phase (3, then 4, then 5, since each depends on the one before):

* lines that do not parse (a crash or a full disk cut them): dropped;
* records without an ``id``: dropped;
* duplicate ids: the last valid record is kept (the rule every reader applies);
* ``failed`` records, and empty ones (a datapoint without a prompt, a response without an
  answer): dropped, so ``--continue`` makes them again under the same id;
* orphans: responses to a datapoint that is missing or failed, evaluations of a response
  that is missing or failed: dropped (they were made from something that no longer counts);
* phase 1-2 proposals that failed, and artifacts that are not valid JSON: removed;
* ``meta.json``: rebuilt if unreadable, and each field of the wrong shape rebuilt (calls
  and spend from the call ledger); the first phase with a gap, and every phase after it,
  leave ``phases_completed``;
* the call ledger (``calls.jsonl``): lines that are not its shapes dropped, calls a killed
  process left open settled at their estimate; ``meta.json``'s calls and spend are the
  ledger's (a run from before the ledger: what its records say they cost).

Every file is rewritten atomically (temp file + rename), only when something changes, under
the run folder's exclusive lock. ``dry_run`` reports the same findings and changes nothing
(it rehearses the repair on a scratch copy to name the phases it would reopen).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from coeval.config.phase_order import ordered_phases
from coeval.phase_ids import DATA_GENERATION, EVALUATION, MAPPING_PHASES, RECORD_PHASES, RESPONSE_COLLECTION
from coeval.phases.base import RunView
from coeval.planning.ingested import merge_ingested
from coeval.plugins.config_loading import read_config_snapshot
from coeval.record_schema import DATAPOINT_ID, ERROR_KIND, ID, RESPONSE_ID, STATUS
from coeval.run.drift import settings_of
from coeval.run.ledger import written_calls
from coeval.storage.call_ledger import (
    LEDGER_NAME,
    drop_bad_lines,
    ledger_path,
    read_ledger,
    settle_open_calls,
)
from coeval.storage.leftovers import remove_stale_scratch, sweep_temp_files
from coeval.storage.meta_check import meta_problems
from coeval.storage.records import FAILED, record_status, usable_datapoint, usable_response
from coeval.storage.run_folder import PHASE_DIRS, RunFolder, atomic_write_json, atomic_write_text, utc_now
from coeval.storage.safe_files import UnsafeRunFile, read_run_file

if TYPE_CHECKING:
    from coeval.plugins.manager import Registries

__all__ = ["FileRepair", "RepairReport", "repair_run"]

_ORDER = RECORD_PHASES


@attrs.define
class FileRepair:
    path: str
    phase: str
    lines: int = 0
    kept: int = 0
    bad_lines: int = 0
    no_id: int = 0
    duplicates: int = 0
    failed: int = 0
    orphans: int = 0

    @property
    def changed(self) -> bool:
        return self.kept != self.lines

    def to_dict(self) -> dict[str, Any]:
        return {**attrs.asdict(self), "changed": self.changed}


@attrs.define
class RepairReport:
    run: str
    dry_run: bool
    files: list[FileRepair] = attrs.field(factory=list)
    removed_files: list[str] = attrs.field(factory=list)
    meta_rebuilt: bool = False
    #: ``meta.json`` fields of the wrong shape, rebuilt: "field: the rule it broke"
    meta_fields_fixed: list[str] = attrs.field(factory=list)
    #: call ledger lines that were not its shapes, dropped; calls left open, settled
    ledger_lines_dropped: int = 0
    ledger_calls_settled: int = 0
    #: meta.json's calls and spend set to the ledger's (they differed)
    counts_reconciled: bool = False
    phases_reopened: list[str] = attrs.field(factory=list)
    failures_by_cause: Counter[str] = attrs.field(factory=Counter)

    @property
    def changed(self) -> bool:
        return any(f.changed for f in self.files) or bool(
            self.removed_files or self.meta_rebuilt or self.phases_reopened or self.meta_fields_fixed
            or self.ledger_lines_dropped or self.ledger_calls_settled or self.counts_reconciled)

    def totals(self) -> dict[str, int]:
        keys = ("lines", "kept", "bad_lines", "no_id", "duplicates", "failed", "orphans")
        return {k: sum(getattr(f, k) for f in self.files) for k in keys}

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "dry_run": self.dry_run,
            "changed": self.changed,
            "totals": self.totals(),
            "files": [f.to_dict() for f in self.files if f.changed],
            "removed_files": self.removed_files,
            "meta_rebuilt": self.meta_rebuilt,
            "meta_fields_fixed": self.meta_fields_fixed,
            "ledger_lines_dropped": self.ledger_lines_dropped,
            "ledger_calls_settled": self.ledger_calls_settled,
            "counts_reconciled": self.counts_reconciled,
            "phases_reopened": self.phases_reopened,
            "failures_by_cause": dict(self.failures_by_cause),
        }


def _scan(path: Path, phase: str) -> tuple[FileRepair, dict[str, dict[str, Any]]]:
    rep = FileRepair(path=str(path), phase=phase)
    latest: dict[str, dict[str, Any]] = {}
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if not line.strip():
                continue
            rep.lines += 1
            try:
                rec = json.loads(line)
            except (json.JSONDecodeError, RecursionError):  # nested too deep: a bad line too
                rep.bad_lines += 1
                continue
            if not isinstance(rec, dict):
                rep.bad_lines += 1
                continue
            rid = rec.get(ID)
            if not isinstance(rid, str) or not rid:
                rep.no_id += 1
                continue
            if rid in latest:
                rep.duplicates += 1
                del latest[rid]
            latest[rid] = rec
    return rep, latest


def _keep(
    rep: FileRepair,
    records: dict[str, dict[str, Any]],
    usable: Callable[[Mapping[str, Any]], bool],
    parent_ok: Callable[[Mapping[str, Any]], bool] | None,
    causes: Counter[str],
) -> list[dict[str, Any]]:
    kept = []
    for rec in records.values():
        if record_status(rec) == FAILED or not usable(rec):
            rep.failed += 1
            causes[str(rec.get(ERROR_KIND) or ("empty" if record_status(rec) != FAILED else "error"))] += 1
            continue
        if parent_ok is not None and not parent_ok(rec):
            rep.orphans += 1
            continue
        kept.append(rec)
    rep.kept = len(kept)
    return kept


def _write(path: Path, records: list[dict[str, Any]]) -> None:
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))


def repair_run(
    run: RunFolder, *, registries: Registries, dry_run: bool = False, config: Any = None
) -> RepairReport:
    """Repair ``run`` (or, with ``dry_run``, only report). ``config`` (default: the run's
    ``config.yaml``) decides which phases still have gaps afterwards."""
    report = RepairReport(run=str(run.root), dry_run=dry_run)
    if not dry_run:  # the caller holds the folder alone: temporary files of killed writes go
        sweep_temp_files(run.root)
        remove_stale_scratch()  # and the rehearsals of killed dry runs
    paid = _paid_calls(run, report, dry_run)  # before failed records go
    usable_ids: dict[str, set[str]] = {}
    parent_of = {RESPONSE_COLLECTION: (DATAPOINT_ID, DATA_GENERATION),
                 EVALUATION: (RESPONSE_ID, RESPONSE_COLLECTION)}
    usable_check: dict[str, Callable[[Mapping[str, Any]], bool]] = {
        DATA_GENERATION: usable_datapoint,
        RESPONSE_COLLECTION: usable_response,
        EVALUATION: lambda rec: True,
    }
    for phase in _ORDER:
        ids: set[str] = set()
        parent = parent_of.get(phase)
        parent_ok = None
        if parent is not None:
            field, parent_phase = parent
            allowed = usable_ids[parent_phase]

            def parent_ok(rec: Mapping[str, Any], _f: str = field, _a: set[str] = allowed) -> bool:
                return str(rec.get(_f)) in _a

        for path in run.jsonl_files(phase):
            rep, records = _scan(path, phase)
            kept = _keep(rep, records, usable_check[phase], parent_ok, report.failures_by_cause)
            ids.update(r[ID] for r in kept)
            report.files.append(rep)
            if rep.changed and not dry_run:
                _write(path, kept)
        usable_ids[phase] = ids

    for folder in (run.root / PHASE_DIRS[phase] for phase in MAPPING_PHASES):
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.json")):
            try:
                data = json.loads(read_run_file(path, run.root).decode("utf-8"))
            except (json.JSONDecodeError, UnicodeDecodeError):
                data = None
            failed_proposal = path.name.endswith(".proposal.json") and isinstance(data, dict) and data.get(STATUS) == FAILED
            if data is None or failed_proposal:
                report.removed_files.append(str(path))
                if not dry_run:
                    path.unlink()

    _repair_meta(run, report, dry_run, config, registries, paid)
    return report


def _paid_calls(run: RunFolder, report: RepairReport, dry_run: bool) -> tuple[Counter[str], dict[str, float]] | None:
    """Calls and spend per model as the call ledger counts them (its bad lines dropped and
    open calls settled first, unless ``dry_run``); for a run from before the ledger whose
    ``meta.json`` cannot say, what the records say they cost. None: keep meta.json's."""
    path = ledger_path(run.root)
    if path.is_file():
        totals = read_ledger(path, strict=False)
        report.ledger_lines_dropped = len(totals.bad_lines)
        report.ledger_calls_settled = len(totals.open)
        if not dry_run:
            drop_bad_lines(path)
            settle_open_calls(path, totals)
        return Counter({k: v for k, v in totals.calls.items() if v}), \
            {k: v for k, v in totals.spend_by_model().items() if v}
    if _meta_readable(run) and not {"calls", "spend_usd"} & {f for f, _ in meta_problems(run.read_meta())}:
        return None
    calls, spend = written_calls(run)
    return calls, dict(spend)


#: What a field of the wrong shape becomes (``calls`` and ``spend_usd`` come from the ledger).
_FIELD_DEFAULTS: dict[str, Any] = {
    "phases_completed": [], "phases_in_progress": [], "runs": [], "phase_log": [], "ingest_log": [],
    "repair_log": [], "drift": [], "status": "incomplete",
}


def _fix_fields(meta: dict[str, Any], report: RepairReport, config: Any, run: RunFolder,
                paid: tuple[Counter[str], Mapping[str, float]] | None) -> None:
    """Rebuild each field of ``meta`` without its shape; set calls and spend to ``paid``."""
    for field, rule in meta_problems(meta):
        report.meta_fields_fixed.append(f"{field}: {rule}")
        if field in _FIELD_DEFAULTS:
            meta[field] = list(_FIELD_DEFAULTS[field]) if isinstance(_FIELD_DEFAULTS[field], list) \
                else _FIELD_DEFAULTS[field]
        elif field in ("calls", "spend_usd"):
            meta[field] = {}
        elif field == "experiment_id":
            meta[field] = config.experiment.id if config is not None else run.root.name
        elif field == "settings" and config is not None:
            meta[field] = settings_of(config)
        else:  # limit, forked_from, settings without a config: dropped
            meta.pop(field, None)
    if paid is None:
        return
    calls = dict(paid[0])
    spend = {k: round(v, 10) for k, v in paid[1].items()}
    if meta.get("calls") != calls or meta.get("spend_usd") != spend:
        report.counts_reconciled = not report.meta_rebuilt
        meta["calls"], meta["spend_usd"] = calls, spend


def _repair_meta(
    run: RunFolder, report: RepairReport, dry_run: bool, config: Any, registries: Registries,
    paid: tuple[Counter[str], Mapping[str, float]] | None = None,
) -> None:
    meta: dict[str, Any] | None
    try:
        meta = json.loads(read_run_file(run.meta_path, run.root).decode("utf-8"))
        if not isinstance(meta, dict):
            meta = None
    except FileNotFoundError:
        meta = None
    except (json.JSONDecodeError, UnicodeDecodeError):
        meta = None
    if config is None:
        config = read_config_snapshot(run)
        if config is not None:
            bad = {field for field, _ in meta_problems(meta or {})}
            config = merge_ingested(config, {k: v for k, v in (meta or {}).items() if k not in bad})
    if meta is None:
        report.meta_rebuilt = True
        calls, spend = paid if paid is not None else (Counter(), {})
        meta = {
            "experiment_id": config.experiment.id if config is not None else run.root.name,
            "status": "incomplete",
            "phases_completed": [],
            "phases_in_progress": [],
            "phase_log": [],
            # the ledger, from what the records say they cost (before failed ones were
            # dropped): a quota or budget must not start again from zero
            "calls": dict(calls),
            "spend_usd": {k: round(v, 10) for k, v in spend.items()},
            "ingest_log": [],
        }
        if config is not None:  # drift protection: the settings the snapshot describes
            meta["settings"] = settings_of(config)
    _fix_fields(meta, report, config, run, paid)
    completed = list(meta.get("phases_completed") or [])
    report.phases_reopened = reopen = _phases_to_reopen(run, report, completed, config, registries)
    if dry_run or (not reopen and not report.meta_rebuilt and not report.changed):
        return
    meta["phases_completed"] = [p for p in completed if p not in reopen]
    if reopen and meta.get("status") == "completed":
        meta["status"] = "incomplete"
    meta.setdefault("repair_log", []).append({"repaired_at": _now(), **report.totals(), "phases_reopened": reopen})
    atomic_write_json(run.meta_path, meta)


def _meta_readable(run: RunFolder) -> bool:
    try:
        return isinstance(json.loads(read_run_file(run.meta_path, run.root).decode("utf-8")), dict)
    except UnsafeRunFile:
        raise  # a FIFO or an outside link: refused, not rebuilt over
    except (OSError, ValueError):
        return False


def _phases_to_reopen(
    run: RunFolder, report: RepairReport, completed: list[str], config: Any, registries: Registries
) -> list[str]:
    """Completed phases from the first one with a gap on. With a config, the gaps are what
    the phase surveys find once the records are fixed; a dry run rehearses the repair on a
    copy to find them, so it names the same phases the repair then reopens."""
    order = list(PHASE_DIRS)
    if config is None:  # reopen the phases whose records changed, and every later one
        first = min((order.index(f.phase) for f in report.files if f.changed), default=None)
        return [] if first is None else [p for p in completed if p in order and order.index(p) >= first]
    if report.dry_run:
        return _rehearse(run, config, registries)
    view = RunView(config, run, registries)
    reopen: list[str] = []
    gap = False
    for phase in ordered_phases(registries):
        gap = gap or not phase.survey(view).complete
        if gap and phase.name in completed:
            reopen.append(phase.name)
    return reopen


def _rehearse(run: RunFolder, config: Any, registries: Registries) -> list[str]:
    """The phases a real repair of ``run`` would reopen, found by repairing a scratch copy."""
    remove_stale_scratch()  # rehearsals of repairs that were killed
    with tempfile.TemporaryDirectory(prefix=f"coeval-repair-{os.getpid()}-") as scratch:
        copy = Path(scratch) / run.root.name
        # the records, meta.json and config.yaml; not the lock, the log or analysis output.
        # Hard links, not copies: repair replaces files (write and rename), never edits them
        # (nor the call ledger: a repair appends to it, which would reach the original through the link)
        shutil.copytree(run.root, copy, ignore=shutil.ignore_patterns("*.lock", "*.log", "analysis", LEDGER_NAME),
                        copy_function=_link_or_copy)
        return repair_run(RunFolder(copy), config=config, registries=registries).phases_reopened


def _link_or_copy(src: str, dest: str) -> None:
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)


def _now() -> str:
    return utc_now()
