"""``tasks[].data``: a task whose datapoints come from the user's file or dataset, not a teacher.

The reading itself (JSONL, CSV, Parquet, a Hugging Face dataset from the local hub cache,
row-level errors) is a plugin's: the reader registered for the data's source
(``register_task_data_readers``; coeval-benchmarks registers the readers of ``coeval
ingest``). The core only knows the settings, asks that reader for the facts a run needs
(:func:`coeval.config.data_readers.data_reader`), and writes what it returns in phase 3.

A loaded config carries ``sha256`` (of the file's content) and ``rows``: the task's
definition, and so the settings ``--continue`` checks for drift, changes when the file does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

__all__ = ["TaskData", "data_folder", "data_teacher"]


@attrs.frozen
class TaskData:
    """Where a task's datapoints come from, and which columns are what."""

    prompt: str
    file: str | None = None
    dataset: str | None = None
    split: str | None = None
    reference: str | None = None
    labels: tuple[str, ...] = ()
    id: str | None = None
    #: Columns with Python tests for the answer's code and the function they call (``checker: python_tests``).
    tests: str | None = None
    entry_point: str | None = None
    #: The column with the code a reply completes (default: the prompt, when it is Python defining entry_point).
    code_prefix: str | None = None
    #: Filled in when the config is loaded: the content hash and the number of rows.
    sha256: str | None = None
    rows: int | None = None

    def spec(self) -> dict[str, Any]:
        """The settings as the reader takes them (the raw ``data`` mapping)."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in attrs.asdict(self).items() if v is not None}


def data_folder(source: str | None) -> Path:
    """What a relative ``data.file`` is relative to: the config file's folder (the current
    directory for a config built in Python)."""
    return Path(source).resolve().parent if source else Path.cwd()


def data_teacher(task: str) -> str:
    """The teacher id of a task's own datapoints (``support`` -> ``support-data``, as
    ``coeval ingest --file`` names it)."""
    return f"{task}-data"
