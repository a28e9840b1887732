"""The run folder: paths, atomic JSON artifacts, locked ``meta.json``, append-only JSONL.

Layout (the legacy layout, so runs in the legacy format load unchanged)::

    {storage_folder}/{experiment_id}/
      meta.json  config.yaml  run.log
      phase1_attributes/{task}.target_attrs.json, {task}.nuanced_attrs.json
      phase2_rubric/{task}.rubric.json
      phase3_datapoints/{task}.{teacher}.datapoints.jsonl
      phase4_responses/{task}.{teacher}.{student}.responses.jsonl
      phase5_evaluations/{task}.{teacher}.{judge}.evaluations.jsonl

File names are for people: model names contain dots, so readers never parse them and rely
on record fields instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from filelock import FileLock

from coeval.phase_ids import (
    ATTRIBUTE_MAPPING,
    DATA_GENERATION,
    EVALUATION,
    FOLDERS,
    RESPONSE_COLLECTION,
    RUBRIC_MAPPING,
)
from coeval.record_schema import TEXT_REPLACED
from coeval.storage.safe_files import (
    folder_lock,
    open_no_follow,
    open_regular,
    read_run_file,
    refuse_links,
    run_files,
)

__all__ = [
    "PHASE_DIRS",
    "JsonlWriter",
    "RunFolder",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "cut_partial_last_line",
    "iter_jsonl",
    "loads_record",
    "parse_stamp",
    "utc_now",
]

#: Phase id -> its folder (the standard phases' own, :data:`coeval.phase_ids.FOLDERS`).
PHASE_DIRS = FOLDERS


#: (whole second, its stamp): records in one second share the formatted time
_last_stamp: tuple[int, str] = (-1, "")


def utc_now() -> str:
    """The current UTC time to the second, as records carry it (``2026-11-28T22:46:55Z``).
    Formatted once a second: a run stamps every record, hundreds a second."""
    global _last_stamp
    second = int(time.time())
    last = _last_stamp
    if last[0] != second:
        last = _last_stamp = (second, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second)))
    return last[1]


def parse_stamp(value: object) -> datetime | None:
    """A time as :func:`utc_now` writes it (or any ISO 8601 form); None when ``value`` is
    not one (a hand-edited or older ``meta.json``)."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def atomic_write_text(path: Path, text: str) -> None:
    """Write via a temp file in the same folder and rename: readers see old or new, never half."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """:func:`atomic_write_text` for bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    refuse_links(path.parent)  # the temp file would land wherever the link points
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:  # a read-only folder, a full disk: name the file being written
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        # name the file the user knows (an immutable meta.json), not the temporary one
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, ensure_ascii=False, indent=2) + "\n")


#: What a record says when its text had lone UTF-16 surrogates (a cut-off emoji escape).
SURROGATES_NOTE = "lone UTF-16 surrogates replaced by U+FFFD"
_SURROGATE = re.compile("[\ud800-\udfff]")


def without_surrogates(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings replaced by U+FFFD (they cannot be
    written as UTF-8, nor sent to a provider)."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {without_surrogates(k): without_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_surrogates(v) for v in value]
    return value


def _loads_escaped(line: bytes) -> Any:
    """json's parse, which accepts what orjson does not (NaN, escaped lone surrogates);
    surrogates are replaced, so a record read can always be written and sent again. A line
    nested too deep to read is a ValueError (a bad line), not a RecursionError."""
    try:
        value = json.loads(line)
    except RecursionError:
        raise ValueError("JSON nested too deep") from None
    if b"\\ud" in line.lower():
        value = without_surrogates(value)
    return value


try:  # orjson parses a record in a third of json's time; a run holds millions of them
    import orjson

    def loads_record(line: bytes) -> Any:
        """One JSON value from UTF-8 bytes; ValueError when the line is not one (also when
        it is nested too deep to read: a crafted line is a bad line, not a crash)."""
        try:
            return orjson.loads(line)
        except orjson.JSONDecodeError:  # NaN / Infinity, which json.dumps writes; lone surrogates
            return _loads_escaped(line)

except ImportError:  # pragma: no cover - orjson is a dependency; stay correct without it

    def loads_record(line: bytes) -> Any:
        return _loads_escaped(line)


def iter_jsonl(path: Path, *, on_bad_line: Callable[[int, str], None] | None = None) -> Iterator[dict[str, Any]]:
    """Records of a JSONL file. A line that does not parse (a crash mid-write leaves at most
    the last one truncated; bytes that are not UTF-8) is skipped and reported to
    ``on_bad_line(lineno, text)``. A FIFO, device or folder in its place is
    :class:`~coeval.storage.safe_files.UnsafeRunFile`, never waited on or read."""
    try:
        fh = open_regular(path)
    except FileNotFoundError:
        return
    with fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = loads_record(line)
            except ValueError:
                if on_bad_line is not None:
                    on_bad_line(lineno, line.decode("utf-8", errors="replace"))
                continue
            if isinstance(rec, dict):
                yield rec
            elif on_bad_line is not None:
                on_bad_line(lineno, line.decode("utf-8", errors="replace"))


def cut_partial_last_line(path: Path) -> int:
    """Cut a last line that has no newline (a record cut by a crash or power loss).
    Returns the number of bytes removed. Only call this while no other process appends."""
    refuse_links(path)  # never cut the end off a file outside the run
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return 0
    if size == 0:
        return 0
    with path.open("rb") as raw:
        raw.seek(size - 1)
        if raw.read(1) == b"\n":
            return 0
        pos, keep = size, 0
        while pos > 0:
            start = max(0, pos - 65536)
            raw.seek(start)
            data = raw.read(pos - start)
            nl = data.rfind(b"\n")
            if nl >= 0:
                keep = start + nl + 1
                break
            pos = start
    os.truncate(path, keep)
    return size - keep


class JsonlWriter:
    """Appends one JSON object per line, each line in a single ``write(2)`` on an
    ``O_APPEND`` descriptor, so it is on disk (in the OS cache) when ``write`` returns and
    lines of several processes sharing a file never interleave.

    A line is a record only once its newline is written. If the file ends without one (a
    crash, or a power loss, cut the last write), that partial line is cut off on open, so the
    file never keeps a truncated record and the next record starts on a clean line.
    """

    def __init__(self, path: Path, *, fsync: bool = False) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._fsync = fsync
        self._fd: int | None = open_no_follow(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        self._repair_tail()

    def _repair_tail(self) -> None:
        cut_partial_last_line(self.path)

    def write(self, record: Mapping[str, Any]) -> None:
        if self._fd is None:
            raise ValueError(f"{self.path}: writer is closed")
        text = json.dumps(record, ensure_ascii=False) + "\n"
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # a reply with a lone surrogate: stored replaced, and said so
            record = {**without_surrogates(record), TEXT_REPLACED: SURROGATES_NOTE}
            data = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        view = memoryview(data)
        try:
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
        except OSError as exc:  # name the file: os.write's errors do not
            raise OSError(exc.errno, exc.strerror, str(self.path)) from None
        if self._fsync:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RunFolder:
    """One experiment's folder on disk."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._phase_dirs: dict[str, Path] = {}  # built once: phases ask per record
        self._record_files: dict[tuple[str, str, str, str], Path] = {}  # the same, per record file

    @classmethod
    def for_experiment(cls, storage_folder: str | os.PathLike[str], experiment_id: str) -> RunFolder:
        return cls(Path(storage_folder) / experiment_id)

    # ---- paths -------------------------------------------------------------------------
    @property
    def meta_path(self) -> Path:
        return self.root / "meta.json"

    @property
    def config_path(self) -> Path:
        return self.root / "config.yaml"

    @property
    def log_path(self) -> Path:
        return self.root / "run.log"

    def phase_dir(self, phase_id: str) -> Path:
        path = self._phase_dirs.get(phase_id)
        if path is None:
            path = self._phase_dirs[phase_id] = self.root / PHASE_DIRS[phase_id]
        return path

    def target_attrs_path(self, task: str) -> Path:
        return self.phase_dir(ATTRIBUTE_MAPPING) / f"{task}.target_attrs.json"

    def nuanced_attrs_path(self, task: str) -> Path:
        return self.phase_dir(ATTRIBUTE_MAPPING) / f"{task}.nuanced_attrs.json"

    def rubric_path(self, task: str) -> Path:
        return self.phase_dir(RUBRIC_MAPPING) / f"{task}.rubric.json"

    def datapoints_path(self, task: str, teacher: str) -> Path:
        return self.phase_dir(DATA_GENERATION) / f"{task}.{teacher}.datapoints.jsonl"

    def responses_path(self, task: str, teacher: str, student: str) -> Path:
        return self._record_file(RESPONSE_COLLECTION, task, teacher, student)

    def evaluations_path(self, task: str, teacher: str, judge: str) -> Path:
        return self._record_file(EVALUATION, task, teacher, judge)

    def _record_file(self, phase_id: str, task: str, teacher: str, model: str) -> Path:
        """``<phase dir>/<task>.<teacher>.<model>.<kind>.jsonl``, built once per file."""
        key = (phase_id, task, teacher, model)
        path = self._record_files.get(key)
        if path is None:
            kind = "responses" if phase_id == RESPONSE_COLLECTION else "evaluations"
            path = self._record_files[key] = self.phase_dir(phase_id) / f"{task}.{teacher}.{model}.{kind}.jsonl"
        return path

    def jsonl_files(self, phase_id: str) -> list[Path]:
        """The phase's record files; one that is not a regular file, or a link leaving the
        run folder, is :class:`~coeval.storage.safe_files.UnsafeRunFile`."""
        return run_files(self.phase_dir(phase_id), "*.jsonl", self.root)

    def iter_records(self, phase_id: str, **kw: Any) -> Iterator[dict[str, Any]]:
        for path in self.jsonl_files(phase_id):
            yield from iter_jsonl(path, **kw)

    # ---- meta.json -----------------------------------------------------------------------
    def exists(self) -> bool:
        return self.meta_path.is_file()

    def read_meta(self) -> dict[str, Any]:
        """``meta.json`` ({} when there is none). One that is not UTF-8 or not a JSON object
        raises :class:`json.JSONDecodeError`, as unparseable JSON does: callers handle one error."""
        try:
            text = read_run_file(self.meta_path, self.root).decode("utf-8")
        except FileNotFoundError:
            return {}
        except UnicodeDecodeError as exc:
            raise json.JSONDecodeError(f"not UTF-8 text ({exc.reason})", "", exc.start) from None
        meta = json.loads(text)
        if not isinstance(meta, dict):
            raise json.JSONDecodeError(f"a JSON {type(meta).__name__}, not an object", text, 0)
        return meta

    def _meta_lock(self) -> FileLock:
        return folder_lock(self.root / ".meta.lock")

    def update_meta(self, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """Read-modify-write ``meta.json`` under a file lock (shards share the folder)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with self._meta_lock():
            meta = self.read_meta()
            change(meta)
            meta["updated_at"] = utc_now()
            atomic_write_json(self.meta_path, meta)
            return meta

    def read_json(self, path: Path) -> Any:
        return json.loads(read_run_file(path, self.root).decode("utf-8"))
