"""V-61: a task's own data (``tasks[].data``) can be read as configured; and what loading adds.

Validation reads the file (through the reader a plugin registers for the data's source:
coeval-benchmarks registers the readers of ``coeval ingest``) and
reports, naming the config's line: a missing file or uncached dataset, a column that is not
in the file (with a did-you-mean and the file's columns), a bad row (file and row number),
``file`` and ``dataset`` both or neither given, and a rubric left to teachers that no
teacher can write. Once valid, :func:`with_data_facts` fills in what the run needs: the
content hash and row count (drift and ``--limit``), the labels' values as the task's target
attributes, and the label columns as its label attributes.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coeval.config._schema_check import did_you_mean
from coeval.config.data_readers import READER_DISTRIBUTION, TaskDataReaderMissing, data_reader
from coeval.config.errors import format_path
from coeval.shipped_interfaces import BENCHMARK_INTERFACE

if TYPE_CHECKING:
    from coeval.config.data_readers import TaskDataReaderFactory

__all__ = ["check_task_data", "every_task_has_data", "with_data_facts"]

RULE = "V-61"
_TEACHER_WRITTEN = ("auto", "complete", "extend")


def every_task_has_data(tasks: Iterable[tuple[int, Mapping[str, Any]]]) -> bool:
    """Whether no task needs a teacher to write its datapoints."""
    items = list(tasks)
    return bool(items) and all(isinstance(t.get("data"), Mapping) for _, t in items)


def _has_llm_teacher(models: Iterable[tuple[int, Mapping[str, Any]]]) -> bool:
    return any("teacher" in (m.get("roles") or ()) and m.get("interface") != BENCHMARK_INTERFACE for _, m in models)


def _from_snapshot(data: Mapping[str, Any]) -> bool:
    """A run's config.yaml read back: the facts are recorded, the file need not be here."""
    return isinstance(data.get("sha256"), str) and isinstance(data.get("rows"), int)


def check_task_data(validator: Any) -> None:
    """Add V-61 issues to ``validator`` for every task whose ``data`` cannot be used."""
    folder = Path(validator.source).resolve().parent if validator.source else Path.cwd()
    for i, task in validator.tasks:
        data = task.get("data")
        if not isinstance(data, dict):
            continue
        path = ("tasks", i, "data")
        if bool(data.get("file")) == bool(data.get("dataset")):
            validator.add(RULE, path, "data needs either file (a JSONL, JSON, CSV or Parquet file) or dataset "
                          "(a Hugging Face dataset id), not both or neither",
                          "write e.g. data: {file: support.csv, prompt: question}")
            continue
        if data.get("split") and data.get("file"):
            validator.add(RULE, (*path, "split"), "split goes with dataset; a file has no splits",
                          "remove split, or name a dataset instead of a file")
        _teacher_written(validator, i, task)
        if not _shape_rejected(validator, path):
            _readable(validator, path, data, folder)
    for i, task in validator.tasks:
        data = task.get("data")
        if task.get("checker") == "python_tests" and not (isinstance(data, dict) and data.get("tests")):
            validator.add("V-62", ("tasks", i, "checker"), "checker: python_tests runs each answer against its "
                          "datapoint's tests, and this task's datapoints carry none (no data.tests column)",
                          "add data: {..., tests: <column>, entry_point: <column>}, or remove checker",
                          severity="warning")


def _teacher_written(validator: Any, i: int, task: Mapping[str, Any]) -> None:
    for key in ("target_attributes", "nuanced_attributes"):
        if task.get(key) in _TEACHER_WRITTEN:
            validator.add(RULE, ("tasks", i, key), f"{key}: {task[key]} asks teachers for attributes, but this task's "
                          "datapoints come from data", f"remove {key} (the data's labels are its target attributes)")
    rubric = task.get("rubric", "auto")
    if isinstance(rubric, str) and not _has_llm_teacher(validator.models):
        validator.add(RULE, ("tasks", i, "rubric"), f"rubric: {rubric} is written by teachers in phase 2, and no "
                      "model is a teacher (this task's datapoints come from data)",
                      "write the rubric, e.g. rubric: {correctness: \"The answer is right.\"}, or add a teacher")


def _shape_rejected(validator: Any, path: tuple[str | int, ...]) -> bool:
    """Whether the schema already found the ``data`` block malformed (a misspelt or missing
    key, a wrong type): that issue says what to fix, and the block cannot be read as written."""
    where = format_path(path)
    return any(issue.path == where or issue.path.startswith((f"{where}.", f"{where}["))
               for issue in validator.issues)


def _readable(validator: Any, path: tuple[str | int, ...], data: Mapping[str, Any], folder: Path) -> None:
    try:
        data_reader(data, validator.task_data_readers).inspect_data(data, folder)
    except TaskDataReaderMissing as exc:
        validator.add(RULE, path, str(exc), f"pip install {READER_DISTRIBUTION}")
    except ValueError as exc:  # the reader's DataProblem (key, column, columns)
        if not validator.check_filesystem and _from_snapshot(data):
            return
        key = str(getattr(exc, "key", "file"))
        column, columns = getattr(exc, "column", None), tuple(getattr(exc, "columns", ()))
        key_path = (*path, *(int(p) if p.isdigit() else p for p in key.split(".")))
        if column is not None and columns:
            guess = did_you_mean(column, columns)
            message = f"{exc}" + (f" (did you mean {guess!r}?)" if guess else "") + f"; its columns: {', '.join(columns)}"
            fix = f"replace {column!r} with {guess!r}" if guess else f"use one of: {', '.join(columns)}"
            validator.add(RULE, key_path, message, fix)
        else:
            validator.add(RULE, key_path, str(exc), "fix the data or the data settings, then validate again")


def with_data_facts(raw: Mapping[str, Any], source: str | None,
                    readers: Mapping[str, TaskDataReaderFactory]) -> dict[str, Any]:
    """``raw`` (valid) with each data task completed from its data: ``data.sha256`` and
    ``data.rows``, ``sampling.total`` (the rows, or fewer when the config caps it), the label
    columns' values as ``target_attributes`` and the label columns as ``label_attributes``."""
    tasks = raw.get("tasks")
    if not isinstance(tasks, list) or not any(isinstance(t, dict) and isinstance(t.get("data"), dict) for t in tasks):
        return dict(raw)
    out = copy.deepcopy(dict(raw))
    folder = Path(source).resolve().parent if source else Path.cwd()
    for task in out["tasks"]:
        data = task.get("data") if isinstance(task, dict) else None
        if not isinstance(data, dict):
            continue
        try:
            facts = data_reader(data, readers).inspect_data(data, folder)
        except ValueError:
            if _from_snapshot(data):
                continue  # a run's config.yaml: its facts were recorded when it ran
            raise
        data["sha256"], data["rows"] = facts.sha256, facts.rows
        sampling = dict(task.get("sampling") or {})
        sampling["total"] = min(int(sampling.get("total", facts.rows)), facts.rows)
        task["sampling"] = sampling
        labels = [str(x) for x in data.get("labels") or ()]
        if not isinstance(task.get("target_attributes"), dict):
            task["target_attributes"] = {k: list(facts.label_values.get(k, ())) for k in labels}
        task.setdefault("nuanced_attributes", {})
        task.setdefault("label_attributes", labels)
    return out
