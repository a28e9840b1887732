"""Records too big for the viewer's database, left out of it with a warning.

DuckDB's JSON reader refuses a whole file when one line is longer than its
``maximum_object_size``, so one oversized reply (a model that looped, or a line written to
break the viewer) would fail the build and every page. When that happens, the files that
can hold such a line (those bigger than the limit) are copied beside the database being
built without it, the build reads the copies, and each left-out record is a warning naming the
file and the line. The run's own files are never changed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from coeval.storage.safe_files import FILE_MODE, open_no_follow, open_regular

__all__ = ["MAX_RECORD_BYTES", "is_oversize_error", "without_oversized"]

#: the longest record line the viewer reads (DuckDB's own default limit)
MAX_RECORD_BYTES = 16 << 20
_CHUNK = 1 << 20


def is_oversize_error(exc: BaseException) -> bool:
    """Whether DuckDB refused a file for a line over ``maximum_object_size``."""
    return "maximum_object_size" in str(exc)


def _copy_without_long_lines(source: Path, target: Path, limit: int) -> list[tuple[int, int]]:
    """Copy ``source`` to ``target`` leaving out every line longer than ``limit`` bytes;
    returns (line number, bytes) of each line left out. Memory stays under ``limit``."""
    left_out: list[tuple[int, int]] = []
    fd = open_no_follow(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with open_regular(source) as src, os.fdopen(fd, "wb") as dst:
        line_no, size, kept = 1, 0, bytearray()  # the line being read: its bytes so far, kept while short
        while chunk := src.read(_CHUNK):
            start = 0
            while start < len(chunk):
                end = chunk.find(b"\n", start)
                piece = chunk[start:] if end < 0 else chunk[start : end + 1]
                size += len(piece)
                if size <= limit + 1:
                    kept += piece
                else:
                    kept.clear()  # too long: its bytes are dropped as they come
                if end < 0:
                    break
                if size <= limit + 1:  # the line, its newline included
                    dst.write(kept)
                else:
                    left_out.append((line_no, size - 1))
                kept.clear()
                line_no, size, start = line_no + 1, 0, end + 1
        if size > limit:  # a last line without a newline
            left_out.append((line_no, size))
        else:
            dst.write(kept)
    return left_out


def without_oversized(files: Sequence[Path], beside: Path, limit: int = MAX_RECORD_BYTES) -> tuple[list[Path], list[str]]:
    """``files`` with each one that holds a line over ``limit`` replaced by a copy without
    those lines (named ``<beside>-<file name>``: beside the database being built, removed
    with it), and a warning per line left out."""
    out: list[Path] = []
    warnings: list[str] = []
    for path in files:
        if path.stat().st_size <= limit:
            out.append(path)
            continue
        copy = beside.with_name(f"{beside.name}-{path.name}")
        left_out = _copy_without_long_lines(path, copy, limit)
        if not left_out:
            copy.unlink()
            out.append(path)
            continue
        out.append(copy)
        warnings += [f"{path} line {line}: a record of {size // 2**20 + 1} MB, over the viewer's "
                     f"{limit // 2**20} MB limit, is left out of the viewer (the run's file is unchanged)"
                     for line, size in left_out]  # fmt: skip
    return out, warnings
