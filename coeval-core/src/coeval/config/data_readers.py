"""Which plugin reads a task's own data (``tasks[].data``): the reader registered for the
data's source through ``register_task_data_readers``, or an error naming what to install.

Apart from :mod:`coeval.config.task_data` (the settings, which the config record holds), so
that the record imports nothing of the plugin contract. The reader's shape
(:class:`TaskDataReader`) is defined here, below the contract, which re-exports it to plugins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "READER_DISTRIBUTION",
    "RegisteredReader",
    "TaskDataFacts",
    "TaskDataReader",
    "TaskDataReaderFactory",
    "TaskDataReaderMissing",
    "data_reader",
    "data_source",
    "readers_of",
]

#: the distribution whose plugin reads task data, named in the error when none is installed
READER_DISTRIBUTION = "coeval-benchmarks"


class TaskDataFacts(Protocol):
    """What a run needs to know of a task's own data before reading it in phase 3."""

    #: the content hash of the data (``--continue`` refuses a changed file as drift)
    @property
    def sha256(self) -> str: ...

    #: how many rows it holds (``sampling.total`` is at most this)
    @property
    def rows(self) -> int: ...

    #: label column -> its values, sorted (the task's target attributes)
    @property
    def label_values(self) -> Mapping[str, Sequence[str]]: ...


@runtime_checkable
class TaskDataReader(Protocol):
    """Reads a task's own datapoints (``tasks[].data``) for validation, loading and phase 3.

    ``spec`` is the task's ``data`` mapping; a relative file is relative to ``base_dir`` (the
    config's folder). Both raise :class:`ValueError` when the data cannot be read as
    configured, with optional attributes ``key`` (the ``data`` key at fault: ``file``,
    ``prompt``, ``labels.0``...), ``column`` and ``columns`` (the file's), which validation
    turns into a did-you-mean."""

    def inspect_data(self, spec: Mapping[str, Any], base_dir: Path, /) -> TaskDataFacts:
        """Check the data against its settings; its hash, row count and label values."""
        ...

    def task_rows(self, task: str, spec: Mapping[str, Any], base_dir: Path, now: str, /) -> list[dict[str, Any]]:
        """The datapoint record of every row, in file order (under the teacher ``{task}-data``)."""
        ...


#: ``factory()`` -> a :class:`TaskDataReader` (called when data is read, so registering costs nothing).
TaskDataReaderFactory = Callable[[], TaskDataReader]


class RegisteredReader(Protocol):
    """One registration of ``register_task_data_readers``: the data source it reads and
    its factory (an entry of the registries' ``task_data_readers``)."""

    @property
    def name(self) -> str: ...

    @property
    def value(self) -> TaskDataReaderFactory: ...


class TaskDataReaderMissing(LookupError):
    """No installed plugin registers a reader for the data's source."""


def data_source(spec: Mapping[str, Any]) -> str:
    """The ``data`` key saying where the rows are, and so which reader reads them."""
    return "dataset" if spec.get("dataset") else "file"


def readers_of(registered: Iterable[RegisteredReader]) -> dict[str, TaskDataReaderFactory]:
    """Data source -> the factory of its reader, as the installed plugins registered them
    (``registered``: the registries' ``task_data_readers``)."""
    return {entry.name: entry.value for entry in registered}


def data_reader(spec: Mapping[str, Any], readers: Mapping[str, TaskDataReaderFactory]) -> TaskDataReader:
    """The reader registered for the source of ``spec`` (a task's ``data``);
    :class:`TaskDataReaderMissing` names what to install when no plugin registers one."""
    source = data_source(spec)
    factory = readers.get(source)
    if factory is None:
        raise TaskDataReaderMissing(
            f"tasks[].data.{source} is read by a plugin's task-data reader, and no installed plugin "
            f"registers one (pip install {READER_DISTRIBUTION})"
        )
    return factory()
