"""A config task's own datapoints (``tasks[].data``), read with the readers of ``coeval ingest``.

::

    tasks:
      - name: support
        data: {file: support.csv, prompt: question, reference: answer, labels: [intent]}

The file (JSONL, JSON, CSV or Parquet, relative to the config's folder) or a Hugging Face
dataset's split from the local hub cache (``data: {dataset: org/name, split: test, ...}``)
goes through the same path as ``coeval ingest --file``: :class:`OwnDataAdapter` checks each
row and builds the item, :func:`coeval_benchmarks.ingest.load_items` reports a bad row by
file and row number, and the datapoint records are those ingest writes, under the teacher
``{task}-data``. The module is the reader :mod:`coeval_benchmarks.plugin` registers for
``file`` and ``dataset`` data (``register_task_data_readers``): the core calls
:func:`inspect_data` while validating and loading a config (columns for did-you-mean, row
count, content hash for drift) and :func:`task_rows` in phase 3 and on ``--continue`` (which
rows are which of the run's datapoints).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import attrs

from coeval_benchmarks.base import BenchmarkAdapter, BenchmarkItem
from coeval_benchmarks.hub import HubError, hub_source
from coeval_benchmarks.ingest import IngestError, _datapoint, load_items, select_items
from coeval_benchmarks.own_data import OWN_DATA_SPLIT, OwnDataAdapter
from coeval_benchmarks.sources import DatasetFileError, read_rows

__all__ = ["DataFacts", "DataProblem", "data_teacher", "inspect_data", "task_datapoints", "task_rows"]

#: the `data` keys that name one column each
_FIELD_KEYS = ("prompt", "reference", "id", "tests", "entry_point", "code_prefix")


class DataProblem(ValueError):
    """The data cannot be read as configured. ``key``: the ``data`` key at fault (``file``,
    ``prompt``, ``labels.0``...); ``columns``: the file's columns when they are known."""

    def __init__(self, message: str, key: str = "file", column: str | None = None,
                 columns: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.key = key
        self.column = column
        self.columns = columns


@attrs.frozen
class DataFacts:
    """What a run needs to know of the data before reading it in phase 3."""

    describe: str
    columns: tuple[str, ...]
    rows: int
    sha256: str
    #: label column -> its values, sorted (the task's target attributes)
    label_values: Mapping[str, tuple[str, ...]]


def data_teacher(task: str) -> str:
    """The teacher name a task's own datapoints are written under (as ``ingest --file``)."""
    return f"{task}-data"


@attrs.frozen
class _HubDataset:
    """What :func:`hub_source` reads of an adapter: the dataset id (no configuration folder)."""

    hub_id: str
    hub_config: str | None = None


def _files(spec: Mapping[str, Any], base_dir: Path) -> tuple[tuple[Path, ...], str]:
    if spec.get("dataset"):
        dataset, split = str(spec["dataset"]), str(spec.get("split") or "test")
        try:
            files, names = hub_source(cast(BenchmarkAdapter, _HubDataset(dataset)), split, offline=True)
        except HubError as exc:
            raise DataProblem(f"dataset {dataset!r} split {split!r}: {exc}", "dataset") from None
        return files, f"{names} of {dataset} (Hugging Face hub cache)"
    path = Path(str(spec.get("file"))).expanduser()
    path = path if path.is_absolute() else base_dir / path
    if not path.is_file():
        raise DataProblem(f"data file {path} does not exist", "file")
    return (path,), str(path)


def _adapter(spec: Mapping[str, Any], files: tuple[Path, ...]) -> OwnDataAdapter:
    return OwnDataAdapter(
        files[0],
        prompt_field=str(spec["prompt"]),
        reference_field=spec.get("reference"),
        id_field=spec.get("id"),
        label_fields=tuple(str(x) for x in spec.get("labels") or ()),
        source_files=files,
        tests_field=spec.get("tests"),
        entry_point_field=spec.get("entry_point"),
        code_prefix_field=spec.get("code_prefix"),
        option_names={f: f"data.{f}" for f in (*_FIELD_KEYS, "labels")},
    )


def _columns(files: tuple[Path, ...]) -> tuple[str, ...]:
    try:
        for _number, row in read_rows(files[0]):
            return tuple(str(k) for k in row)
    except DatasetFileError as exc:
        raise DataProblem(str(exc), "file") from None
    raise DataProblem(f"{files[0]}: the file holds no rows", "file")


def _check_fields(spec: Mapping[str, Any], columns: tuple[str, ...], where: str) -> None:
    wanted = [(key, spec.get(key)) for key in _FIELD_KEYS]
    wanted += [(f"labels.{i}", label) for i, label in enumerate(spec.get("labels") or ())]
    for key, column in wanted:
        if column is not None and str(column) not in columns:
            raise DataProblem(f"column {column!r} (data.{key}) is not in {where}", key, str(column), columns)


def _digest(files: tuple[Path, ...]) -> str:
    sha = hashlib.sha256()
    for path in files:
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                sha.update(block)
    return sha.hexdigest()


_CACHE: dict[tuple[Any, ...], DataFacts] = {}


def inspect_data(spec: Mapping[str, Any], base_dir: Path) -> DataFacts:
    """Columns, row count, content hash and label values of the data; DataProblem says what
    is wrong (a missing file, a column that is not there, a bad row with its number)."""
    files, where = _files(spec, base_dir)
    stamp = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in files)
    key = (stamp, tuple(sorted((k, str(v)) for k, v in spec.items() if k not in ("sha256", "rows"))))
    if key in _CACHE:
        return _CACHE[key]
    columns = _columns(files)
    _check_fields(spec, columns, where)
    try:
        items, _source = load_items(_adapter(spec, files), OWN_DATA_SPLIT, None, offline=True)
    except IngestError as exc:
        raise DataProblem(str(exc), "file", columns=columns) from None
    labels: dict[str, set[str]] = {}
    for item in items:
        for name, value in item.attributes.items():
            labels.setdefault(name, set()).add(value)
    facts = DataFacts(where, columns, len(items), _digest(files), {k: tuple(sorted(v)) for k, v in labels.items()})
    _CACHE[key] = facts
    return facts


def _items(spec: Mapping[str, Any], base_dir: Path) -> tuple[list[BenchmarkItem], OwnDataAdapter]:
    files, _where = _files(spec, base_dir)
    adapter = _adapter(spec, files)
    try:
        items, _source = load_items(adapter, OWN_DATA_SPLIT, None, offline=True)
    except IngestError as exc:
        raise DataProblem(str(exc), "file") from None
    return items, adapter


def task_datapoints(task: str, spec: Mapping[str, Any], base_dir: Path, limit: int, now: str) -> list[dict[str, Any]]:
    """The datapoint records of the task's first ``limit`` items (as ``--limit`` picks them
    for ingest: spread over the file, the same ones every time, a larger limit keeps them)."""
    items, adapter = _items(spec, base_dir)
    teacher = data_teacher(task)
    return [_datapoint(item, adapter, task, teacher, OWN_DATA_SPLIT, now) for item in select_items(items, limit)]


def task_rows(task: str, spec: Mapping[str, Any], base_dir: Path, now: str) -> list[dict[str, Any]]:
    """The datapoint record of every row, in file order: the core matches them with the
    run's datapoints (an edited, removed, added or moved row) and picks those it runs."""
    items, adapter = _items(spec, base_dir)
    teacher = data_teacher(task)
    return [_datapoint(item, adapter, task, teacher, OWN_DATA_SPLIT, now) for item in items]
