"""Which plugin reads a task's own data (``tasks[].data``): the reader registered for the
data's source through ``register_task_data_readers``, or an error naming what to install.

Apart from :mod:`coeval.config.task_data` (the settings, which the config record holds), so
that the record imports nothing of the plugin contract.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from coeval.contract.registries import Registries
    from coeval.contract.types import TaskDataReader, TaskDataReaderFactory

__all__ = ["READER_DISTRIBUTION", "TaskDataReaderMissing", "data_reader", "data_source", "readers_of"]

#: the distribution whose plugin reads task data, named in the error when none is installed
READER_DISTRIBUTION = "coeval-benchmarks"


class TaskDataReaderMissing(LookupError):
    """No installed plugin registers a reader for the data's source."""


def data_source(spec: Mapping[str, Any]) -> str:
    """The ``data`` key saying where the rows are, and so which reader reads them."""
    return "dataset" if spec.get("dataset") else "file"


def readers_of(registries: Registries) -> dict[str, TaskDataReaderFactory]:
    """Data source -> the factory of its reader, as the installed plugins registered them."""
    return {entry.name: entry.value for entry in registries.task_data_readers}


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
