"""What a run folder already holds: calls done (for ``--continue``) and their measured size.

Both are asked before every ``coeval run --continue`` (the spend check), so neither reads
more than it must: phases already complete are not read at all, and token sizes come from
a bounded sample of each file (an average needs a few hundred calls, not a million).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from coeval.config.model import Config
from coeval.phase_ids import ATTRIBUTE_MAPPING, CALLER_FIELDS, RUBRIC_MAPPING
from coeval.phases.mapping import _proposal_path
from coeval.planning.cost.measure import Measured
from coeval.record_schema import LATENCY_MS, STATUS, TASK_ID, USAGE
from coeval.storage.records import is_ok, scan_phase
from coeval.storage.run_folder import RunFolder, iter_jsonl, parse_stamp

__all__ = ["HISTORY_SAMPLE_PER_FILE", "done_calls", "measured_history", "overlap_share", "seconds_per_record"]

#: Records read per phase file to measure token sizes of the calls already made.
HISTORY_SAMPLE_PER_FILE = 200

#: phase -> the record field naming the model that made the call
_MODEL_FIELD = CALLER_FIELDS


def _made_by_a_model(rec: dict[str, Any], field: str, models: set[str]) -> bool:
    """A model call's record: its model field names a configured model (phase-5 records of
    model-free evaluators name ``label``, ``metric:...`` or ``gold`` there)."""
    return rec.get(field) in models


def _proposals(run: RunFolder, config: Config, phase: str) -> list[tuple[str, str, Path, Path]]:
    """(task, teacher, artifact, proposal path) of the teacher calls phases 1-2 make."""
    out = []
    for task in config.tasks:
        if phase == ATTRIBUTE_MAPPING:
            artifacts = [run.target_attrs_path(task.name), run.nuanced_attrs_path(task.name)]
        else:
            artifacts = [run.rubric_path(task.name)]
        for artifact in artifacts:
            for teacher in config.teachers:
                out.append((task.name, teacher.name, artifact, _proposal_path(artifact, teacher.name)))
    return out


def done_calls(
    run: RunFolder, config: Config, *, skip_phases: Collection[str] = ()
) -> Counter[tuple[str, str, str]]:
    """(task, phase, model) -> calls that already have an ``ok`` result and need no repeat.

    ``skip_phases`` (those in ``meta.phases_completed``) are not read: the caller counts
    nothing left for them.
    """
    done: Counter[tuple[str, str, str]] = Counter()
    for phase in (ATTRIBUTE_MAPPING, RUBRIC_MAPPING):
        if phase in skip_phases:
            continue
        for task, teacher, artifact, path in _proposals(run, config, phase):
            artifact_done = artifact.is_file()
            ok = False
            if path.is_file():
                try:
                    ok = json.loads(path.read_text(encoding="utf-8")).get(STATUS) == "ok"
                except (OSError, ValueError, AttributeError):
                    ok = False
            if ok or artifact_done:
                done[(task, phase, teacher)] += 1
    models = {m.name for m in config.models}
    for phase, field in _MODEL_FIELD.items():
        if phase in skip_phases:
            continue

        def reduce(rec: dict[str, Any], field: str = field) -> tuple[str, str, bool]:
            return str(rec.get(TASK_ID)), str(rec.get(field)), is_ok(rec) and _made_by_a_model(rec, field, models)

        for task, model, counted in scan_phase(run, phase, reduce).values():  # the last record of each id
            if counted:
                done[(task, phase, model)] += 1
    return done


def _sampled_records(run: RunFolder, phase: str, config: Config) -> Iterator[dict[str, Any]]:
    """Up to :data:`HISTORY_SAMPLE_PER_FILE` model-call records of each file of a phase."""
    models = {m.name for m in config.models}
    for path in run.jsonl_files(phase):
        for rec in islice(iter_jsonl(path), HISTORY_SAMPLE_PER_FILE):
            if _made_by_a_model(rec, _MODEL_FIELD[phase], models):
                yield rec


def measured_history(
    run: RunFolder, config: Config, *, phases: Collection[str] | None = None
) -> dict[tuple[str, str], Measured]:
    """(phase, model) -> token usage and latency of the calls already made (records with
    usage; ``latency_ms`` where a record has it), from a sample of each file; only
    ``phases`` (all when None) are read."""
    out: dict[tuple[str, str], Measured] = {}

    def add(phase: str, model: str, usage: Any, latency_ms: Any = None) -> None:
        if not isinstance(usage, dict):
            return
        tin, tout = usage.get("input_tokens") or 0, usage.get("output_tokens") or 0
        timed = isinstance(latency_ms, int | float) and not isinstance(latency_ms, bool) and latency_ms >= 0
        if tin or tout:
            out.setdefault((phase, model), Measured()).add(float(tin), float(tout),
                                                           latency_s=float(latency_ms) / 1000.0 if timed else None)

    for phase in (ATTRIBUTE_MAPPING, RUBRIC_MAPPING):
        if phases is not None and phase not in phases:
            continue
        for _, teacher, _, path in _proposals(run, config, phase):
            if path.is_file():
                try:
                    rec = json.loads(path.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    continue
                if isinstance(rec, dict) and rec.get(STATUS) == "ok":
                    add(phase, teacher, rec.get(USAGE))
    for phase, field in _MODEL_FIELD.items():
        if phases is not None and phase not in phases:
            continue
        for rec in _sampled_records(run, phase, config):
            if is_ok(rec):
                add(phase, str(rec.get(field)), rec.get(USAGE), rec.get(LATENCY_MS))
    return out


def _logged_spans(run: RunFolder) -> list[tuple[str, float, float, int]]:
    """(phase, start, end, records written) of each ``meta.json`` phase-log entry that wrote
    records, in epoch seconds."""
    try:
        log = run.read_meta().get("phase_log") or []
    except (OSError, ValueError):
        return []
    spans = []
    for entry in log:
        if not isinstance(entry, dict) or not isinstance(entry.get("written"), int) or entry["written"] <= 0:
            continue
        start, end = parse_stamp(entry.get("started_at")), parse_stamp(entry.get("finished_at"))
        if start is None or end is None or end < start:
            continue
        spans.append((str(entry.get("phase")), start.timestamp(), end.timestamp(), int(entry["written"])))
    return spans


def overlap_share(run: RunFolder) -> float:
    """The share of the logged phases' added-up time that ran at the same time as another
    phase (pipelined phases: each one's log entry spans the others'): 0 for phases run one
    by one; the past run's pace then times a pipelined run at its real length, not the sum."""
    spans = sorted((start, end) for _, start, end, _ in _logged_spans(run))
    added = sum(end - start for start, end in spans)
    if added <= 0:
        return 0.0
    union, reach = 0.0, float("-inf")
    for start, end in spans:
        if end > reach:
            union += end - max(start, reach)
            reach = end
    return max(0.0, 1.0 - union / added)


def seconds_per_record(run: RunFolder) -> dict[str, float]:
    """phase -> wall seconds per record written, at the pace the folder's runs kept
    (``meta.json`` ``phase_log``: each entry's start to end over its ``written``); phases
    that wrote nothing are left out. Whole seconds: a phase under a second counts as 0."""
    seconds: Counter[str] = Counter()
    written: Counter[str] = Counter()
    for phase, start, end, n in _logged_spans(run):
        seconds[phase] += int(end - start)
        written[phase] += n
    return {phase: seconds[phase] / n for phase, n in written.items()}
