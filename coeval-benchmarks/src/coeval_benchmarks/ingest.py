"""Write a benchmark into an existing run as the phase 1-3 output of a virtual teacher.

What ingest leaves behind, for a benchmark ``NAME`` ingested into task ``T``:

* ``phase1_attributes/T.target_attrs.json`` (and an empty ``T.nuanced_attrs.json``) and
  ``phase2_rubric/T.rubric.json``, when the task is new to the run;
* ``phase3_datapoints/T.NAME-benchmark.datapoints.jsonl``: one datapoint per item, with the
  gold answer on it (docs/data-format.md, "Benchmark datapoints");
* in ``meta.json``: an ``ingest_log`` entry carrying the task and teacher mappings the
  pipeline adds to the config on ``--continue``, and phases 4-5 taken out of
  ``phases_completed`` so that ``coeval run --continue`` collects responses and evaluations
  for the new teacher, also on a run that had finished.

Ingest is idempotent: datapoint ids are ``{task}__{teacher}__{native id}``, items already
written are skipped, and a run that already holds everything is not touched at all.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs
import yaml
from coeval.config._yaml import load_yaml_guarded
from coeval.record_schema import (
    ATTEMPTS,
    BENCHMARK_ID,
    BENCHMARK_NATIVE_ID,
    BENCHMARK_SPLIT,
    GENERATED_AT,
    ID,
    PROMPT,
    REFERENCE_RESPONSE,
    SAMPLED_TARGET_ATTRIBUTES,
    STATUS,
    TASK_ID,
    TEACHER_MODEL_ID,
)
from coeval.storage import JsonlWriter, RunFolder, atomic_write_json, iter_jsonl, utc_now
from coeval.storage.leftovers import sweep_temp_files
from coeval.storage.lock import RunFolderBusyError, RunLock

from coeval_benchmarks.base import BenchmarkAdapter, BenchmarkItem, RowError
from coeval_benchmarks.gold import metric_available
from coeval_benchmarks.sources import DatasetFileError, find_source, read_rows

__all__ = [
    "REOPENED_PHASES",
    "IngestError",
    "IngestResult",
    "datapoint_id",
    "ingest",
    "load_items",
    "select_items",
]

log = logging.getLogger(__name__)

#: Phases that must run again once a new teacher has datapoints.
REOPENED_PHASES = ("response_collection", "evaluation")
BENCHMARK_INTERFACE = "benchmark"


class IngestError(ValueError):
    """Bad input for ingest (missing run, unreadable dataset, name clash). Exit code 2."""


@attrs.frozen
class IngestResult:
    benchmark: str
    task: str
    teacher: str
    split: str
    source: str
    available: int
    selected: int
    written: int
    skipped: int
    logged: bool
    warnings: tuple[str, ...] = ()


_NAME = re.compile(r"^[A-Za-z0-9._-]+$")


def _check_name(option: str, value: str) -> None:
    """Task and model names appear in file names and record ids (same rule as the config)."""
    if not _NAME.match(value) or "__" in value:
        raise IngestError(
            f"{option} {value!r}: use letters, digits, '.', '_' and '-' only, and no '__' "
            "(names become part of file names and record ids)"
        )


def datapoint_id(task: str, teacher: str, native_id: str) -> str:
    return f"{task}__{teacher}__{native_id}"


# ---- reading ---------------------------------------------------------------------------------


def load_items(
    adapter: BenchmarkAdapter, split: str, data_dir: Path | None, *, offline: bool = False
) -> tuple[list[BenchmarkItem], str]:
    """Every item of the split in file order, and a description of where it came from."""
    try:
        source = find_source(adapter, split, data_dir, offline=offline)
        items: list[BenchmarkItem] = []
        first_row: dict[str, tuple[Path, int]] = {}
        index = 0
        for path in source.files:
            for number, row in read_rows(path):
                try:
                    adapter.check_row(row)
                    item = adapter.item(row, index, split)
                except RowError as exc:
                    raise IngestError(f"{path} row {number}: {exc}") from None
                if item.native_id in first_row:
                    other_path, other_number = first_row[item.native_id]
                    raise IngestError(
                        f"{path} row {number}: id {item.native_id!r} repeats row {other_number} of "
                        f"{other_path.name}; ids must be unique within a split"
                    )
                first_row[item.native_id] = (path, number)
                items.append(item)
                index += 1
    except DatasetFileError as exc:
        raise IngestError(str(exc)) from None
    if not items:
        raise IngestError(f"{source.describe()}: the file holds no rows")
    return items, source.describe()


def select_items(items: list[BenchmarkItem], limit: int | None) -> list[BenchmarkItem]:
    """``limit`` items spread over the whole split, the same ones every time.

    Items are ranked by a hash of their native id, so the choice does not depend on file order
    (MMLU's file is sorted by subject; its first 100 rows are all one subject) and a larger
    limit keeps every item a smaller one chose. The chosen items keep their file order.
    """
    if limit is None or limit >= len(items):
        return list(items)
    ranked = sorted(range(len(items)), key=lambda i: hashlib.sha256(items[i].native_id.encode()).hexdigest())
    chosen = set(ranked[:limit])
    return [item for i, item in enumerate(items) if i in chosen]


# ---- the run's current state ---------------------------------------------------------------


def _read_config(run: RunFolder) -> dict[str, Any]:
    if not run.config_path.is_file():
        return {}
    try:
        doc = load_yaml_guarded(run.config_path.read_text(encoding="utf-8"), str(run.config_path))
    except yaml.YAMLError as exc:
        raise IngestError(f"{run.config_path}: not valid YAML ({exc})") from None
    return doc if isinstance(doc, dict) else {}


def _named(entries: Any, name: str) -> dict[str, Any] | None:
    if isinstance(entries, list):
        for entry in entries:
            if isinstance(entry, dict) and entry.get("name") == name:
                return entry
    return None


def _merge_attributes(existing: Mapping[str, Any], items: Iterable[BenchmarkItem]) -> dict[str, list[str]]:
    merged: dict[str, set[str]] = {k: set(v) for k, v in existing.items() if isinstance(v, list)}
    for item in items:
        for key, value in item.attributes.items():
            merged.setdefault(key, set()).add(value)
    return {k: sorted(v) for k, v in merged.items()}


def _task_mapping(
    adapter: BenchmarkAdapter, task: str, attributes: Mapping[str, list[str]], rubric: Mapping[str, Any]
) -> dict[str, Any]:
    """The task as a user would write it in a config: static attributes and rubric, so that
    phases 1-2 have nothing to do, and no generated datapoints (the teacher is virtual)."""
    return {
        "name": task,
        "category": "benchmark",
        "description": adapter.description,
        "output_description": adapter.output_description,
        "target_attributes": {k: list(v) for k, v in attributes.items()},
        "nuanced_attributes": {},
        "sampling": {"target": [1, 1], "nuance": [0, 0], "total": 0},
        "rubric": dict(rubric),
        "evaluation_mode": "single",
        "label_attributes": [a for a in adapter.label_attributes if a in attributes],
    }


def teacher_mapping(teacher: str) -> dict[str, Any]:
    return {"name": teacher, "interface": BENCHMARK_INTERFACE, "roles": ["teacher"]}


def _datapoint(
    item: BenchmarkItem, adapter: BenchmarkAdapter, task: str, teacher: str, split: str, now: str
) -> dict[str, Any]:
    return {
        ID: datapoint_id(task, teacher, item.native_id),
        TASK_ID: task,
        TEACHER_MODEL_ID: teacher,
        SAMPLED_TARGET_ATTRIBUTES: dict(item.attributes),
        PROMPT: item.prompt,
        REFERENCE_RESPONSE: item.reference,
        GENERATED_AT: now,
        STATUS: "ok",
        ATTEMPTS: 0,
        BENCHMARK_ID: adapter.name,
        BENCHMARK_SPLIT: split,
        BENCHMARK_NATIVE_ID: item.native_id,
        **item.gold_fields(),
    }


def _metric_warnings(adapter: BenchmarkAdapter, items: Iterable[BenchmarkItem], metrics: Collection[str]) -> list[str]:
    needed = sorted({i.gold_metric for i in items if i.gold_metric in ("bleu", "bertscore")})
    return [
        f"{adapter.name}: gold scores need the {m!r} metric, which no installed plugin registers "
        "(install coeval-analysis); judges still score these items, gold scores will be missing"
        for m in needed
        if not metric_available(m, metrics)
    ]


# ---- ingest ---------------------------------------------------------------------------------


def ingest(
    run: RunFolder,
    adapter: BenchmarkAdapter,
    *,
    split: str | None = None,
    data_dir: Path | None = None,
    limit: int | None = None,
    task_name: str | None = None,
    teacher_name: str | None = None,
    progress: Callable[[Iterable[Any], int], Iterable[Any]] | None = None,
    offline: bool = False,
    metrics: Collection[str] | None = None,
) -> IngestResult:
    """Ingest one benchmark into ``run``. See the module docstring for what is written.

    ``offline``: a split missing from ``data_dir`` is not downloaded from the hub.
    ``metrics``: names of the registered metrics, to warn when gold scores need one that is
    missing (no such warning when None)."""
    if not run.exists():
        raise IngestError(f"{run.root}: not a run folder (no meta.json); start the run with `coeval run` first")
    if limit is not None and limit < 1:
        raise IngestError(f"--limit must be at least 1, got {limit}")
    lock = RunLock(run.root)  # never beside a run: it would end 'completed' with these unanswered
    try:
        lock.acquire()
    except RunFolderBusyError as exc:
        raise IngestError(str(exc)) from None
    try:
        sweep_temp_files(run.root)  # temporary files of killed writes (this folder is ours now)
        return _ingest_locked(run, adapter, split=split, data_dir=data_dir, limit=limit, task_name=task_name,
                              teacher_name=teacher_name, progress=progress, offline=offline, metrics=metrics)
    finally:
        lock.release()


def _ingest_locked(
    run: RunFolder,
    adapter: BenchmarkAdapter,
    *,
    split: str | None,
    data_dir: Path | None,
    limit: int | None,
    task_name: str | None,
    teacher_name: str | None,
    progress: Callable[[Iterable[Any], int], Iterable[Any]] | None,
    offline: bool,
    metrics: Collection[str] | None,
) -> IngestResult:
    split = split or adapter.default_split
    task = task_name or adapter.name
    teacher = teacher_name or adapter.teacher_name
    _check_name("--task-name", task)
    _check_name("--teacher", teacher)
    warnings: list[str] = []

    config = _read_config(run)
    clash = _named(config.get("models"), teacher)
    if clash is not None and clash.get("interface") != BENCHMARK_INTERFACE:
        raise IngestError(
            f"{run.config_path}: model {teacher!r} already exists with interface "
            f"{clash.get('interface')!r}; ingest needs that name for the benchmark teacher"
        )

    items, source = load_items(adapter, split, data_dir, offline=offline)
    selected = select_items(items, limit)
    if metrics is not None:
        warnings.extend(_metric_warnings(adapter, selected, metrics))
    _check_text(selected, adapter, task, teacher, split, source)

    meta = run.read_meta()
    ingest_log = [e for e in meta.get("ingest_log", []) if isinstance(e, dict)]
    earlier = [e for e in ingest_log if e.get("task_name") == task]
    config_task = _named(config.get("tasks"), task)
    # The task is this benchmark's when ingest created it: the config may list it since (the
    # runner writes ingested tasks into the run's config.yaml), a task of the user's never is.
    same_benchmark = all(e.get("benchmark") == adapter.name for e in earlier)
    created_here = any(e.get("owns_task") for e in earlier)
    owned = same_benchmark and (config_task is None or created_here)

    if owned:
        task_spec = _write_task_artifacts(run, adapter, task, selected, warnings)
    else:
        task_spec = config_task if config_task is not None else earlier[-1].get("task", {"name": task})
        warnings.append(
            f"task {task!r} already exists in this run; its attributes and rubric are kept, "
            f"and {adapter.name} adds datapoints to it"
        )

    path = run.datapoints_path(task, teacher)
    existing = {rec.get(ID) for rec in iter_jsonl(path)}
    new_items = [i for i in selected if datapoint_id(task, teacher, i.native_id) not in existing]
    logged_before = any(
        e.get("benchmark") == adapter.name and e.get("task_name") == task and e.get("split") == split
        and e.get("teacher_id") == teacher and e.get("complete", True)  # an interrupted one is finished now
        for e in ingest_log
    )

    if not new_items and logged_before:
        return IngestResult(adapter.name, task, teacher, split, source, len(items), len(selected), 0,
                            len(selected), False, tuple(warnings))

    now = utc_now()
    entry = {
        "benchmark": adapter.name,
        "split": split,
        "source": source,
        "task_name": task,
        "teacher_id": teacher,
        "n_written": len(new_items),
        "n_skipped": len(selected) - len(new_items),
        "n_available": len(items),
        "limit": limit,
        "ingested_at": now,
        "task": task_spec,
        "owns_task": owned,
        "teacher": teacher_mapping(teacher),
        "ingest_id": uuid.uuid4().hex[:12],
    }
    # Logged (as not complete) and phases 4-5 reopened before the first datapoint is
    # written: a kill mid-write leaves rows that --continue answers and status reports, and
    # running the same ingest again finishes it.
    pending = {**entry, "complete": False}

    def start(meta: dict[str, Any]) -> None:
        _reopen_phases(meta)
        meta.setdefault("ingest_log", []).append(pending)

    records = [_datapoint(item, adapter, task, teacher, split, now) for item in new_items]
    run.update_meta(start)
    rows: Iterable[dict[str, Any]] = progress(records, len(records)) if progress else records
    with JsonlWriter(path) as writer:
        for record in rows:
            writer.write(record)

    def finish(meta: dict[str, Any]) -> None:
        log = meta.setdefault("ingest_log", [])
        # this entry, and any interrupted ingest of the same rows this one has finished
        log[:] = [e for e in log if not (isinstance(e, dict) and not e.get("complete", True)
                                          and e.get("task_name") == task and e.get("teacher_id") == teacher
                                          and e.get("benchmark") == adapter.name)]
        log.append({**entry, "complete": True})

    run.update_meta(finish)
    return IngestResult(adapter.name, task, teacher, split, source, len(items), len(selected), len(new_items),
                        len(selected) - len(new_items), True, tuple(warnings))


def _check_text(items: Iterable[BenchmarkItem], adapter: BenchmarkAdapter, task: str, teacher: str, split: str,
                source: str) -> None:
    """Bad text (a lone UTF-16 surrogate: a cut-off emoji escape) is a row error, before
    anything is written."""
    for item in items:
        try:
            json.dumps(_datapoint(item, adapter, task, teacher, split, ""), ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise IngestError(f"{source}: row {item.native_id}: text is not valid Unicode (a lone UTF-16 "
                              f"surrogate at character {exc.start}, e.g. a cut-off emoji escape); fix the row "
                              "and ingest again. Nothing was written") from None


def _reopen_phases(meta: dict[str, Any]) -> None:
    meta["phases_completed"] = [p for p in meta.get("phases_completed", []) if p not in REOPENED_PHASES]


def _write_task_artifacts(
    run: RunFolder, adapter: BenchmarkAdapter, task: str, items: list[BenchmarkItem], warnings: list[str]
) -> dict[str, Any]:
    """Phase 1-2 files of a task the benchmark owns; each written only when it changes."""
    attrs_path = run.target_attrs_path(task)
    current: dict[str, Any] = {}
    if attrs_path.is_file():
        try:
            loaded = run.read_json(attrs_path)
        except ValueError as exc:
            raise IngestError(f"{attrs_path}: not valid JSON ({exc})") from None
        current = loaded if isinstance(loaded, dict) else {}
    attributes = _merge_attributes(current, items)
    if attributes != current:
        atomic_write_json(attrs_path, attributes)
    nuanced = run.nuanced_attrs_path(task)
    if not nuanced.is_file():
        atomic_write_json(nuanced, {})
    rubric_path = run.rubric_path(task)
    rubric: dict[str, Any] = dict(adapter.rubric)
    if not rubric_path.is_file():
        atomic_write_json(rubric_path, rubric)
    else:
        kept = run.read_json(rubric_path)
        if kept != rubric and isinstance(kept, dict):
            warnings.append(f"{rubric_path} differs from the {adapter.name} rubric; the existing rubric is kept")
            rubric = kept
    return _task_mapping(adapter, task, attributes, rubric)
