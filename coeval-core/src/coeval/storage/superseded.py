"""Records a later record of the same id replaced: dropped from their file when the phase
that wrote the replacement ends.

A record is redone when its input was made again (a judgment of an answer that was lost
and remade, an answer to a remade datapoint): the old record is stale and must not be kept
(the last record of an id wins everywhere, but a stale line left on disk is a duplicate of
its id). Failed records stay: each stands for a paid call that the ledger counts. The file
is rewritten atomically, so a kill leaves either the old file (duplicates the next run's
readers still resolve, last one winning, and the next ``--continue`` drops) or the new one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from pathlib import Path

from coeval.record_schema import STATUS
from coeval.storage.run_folder import atomic_write_bytes

__all__ = ["drop_superseded"]

_ID = re.compile(rb'^\{"id": "((?:[^"\\]|\\.)*)"')


def _record_id(line: bytes) -> str | None:
    match = _ID.match(line)
    if match is None:
        return None
    try:
        value = json.loads(b'"' + match.group(1) + b'"')
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _is_ok(line: bytes) -> bool:
    try:
        record = json.loads(line)
    except ValueError:
        return False
    return isinstance(record, dict) and record.get(STATUS) == "ok"


def drop_superseded(path: Path, rewritten: Collection[str]) -> int:
    """Drop from ``path`` every ok record of an id in ``rewritten`` that a later line of the
    same id follows; returns how many lines went. Other lines stay as they are, in order."""
    if not rewritten or not path.is_file():
        return 0
    lines = path.read_bytes().splitlines(keepends=True)
    last: dict[str, int] = {}
    ids: list[str | None] = []
    for index, line in enumerate(lines):
        rid = _record_id(line)
        ids.append(rid if rid in rewritten else None)
        if ids[-1] is not None:
            last[rid] = index  # type: ignore[index]
    drop = {i for i, rid in enumerate(ids) if rid is not None and last[rid] != i and _is_ok(lines[i])}
    if drop:
        atomic_write_bytes(path, b"".join(line for i, line in enumerate(lines) if i not in drop))
    return len(drop)
