"""Which rows of a task's own data file (``tasks[].data``) are which of the run's datapoints.

A row is known by its id column when ``data.id`` names one, else by its content: the fields
a datapoint takes from it (prompt, reference, labels, tests). So a reordered file holds the
same rows. Against the datapoints a run holds, each row of the file is

* unchanged: nothing to do, wherever it now stands in the file;
* edited: its id is a datapoint's whose content differs (without an id column: a row whose
  content is new, at the row number of a datapoint whose content is gone from the file).
  It is written again and supersedes the old record; answers and judgments made from the
  old one are then stale and made again (:mod:`coeval.storage.record_inputs`);
* added: no datapoint is this row yet. It is written (under ``sampling.total``/``--limit``:
  the rows the run holds come first, then rows as ``--limit`` ranks them).

A datapoint that no row is any more is *removed*: its records stay on disk, and the run,
``coeval status`` and ``coeval analyze`` leave it out, with its answers and judgments, by
the ids ``meta.json`` lists under :data:`LEFT_OUT_KEY` (the data file is not needed to
read a run). Without an id column a new row takes the id of its row number
(``row000003``), or, when a datapoint the file still holds has it (rows moved),
``row000003-2``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from coeval.record_schema import (
    BENCHMARK_NATIVE_ID,
    ENTRY_POINT,
    ID,
    PROMPT,
    REFERENCE_RESPONSE,
    SAMPLED_TARGET_ATTRIBUTES,
    TESTS,
)
from coeval.storage.records import is_ok

__all__ = ["LEFT_OUT_KEY", "RowNote", "RowPlan", "left_out_ids", "plan_rows", "row_content"]

#: ``meta.json``: task -> ids of the datapoints whose rows left the data file
LEFT_OUT_KEY = "data_rows_left_out"
#: the datapoint fields a row of the file fills: a row is known by them when it has no id
#: (not ``code_prefix``: the prompt's code by default, and absent from records made before it)
CONTENT_FIELDS = (PROMPT, REFERENCE_RESPONSE, SAMPLED_TARGET_ATTRIBUTES, TESTS, ENTRY_POINT)
_POSITIONAL = re.compile(r"row(\d{6})(?:-\d+)?$")
_PREVIEW = 40


def row_content(dp: Mapping[str, Any]) -> str:
    """A hash of what a row put into its datapoint (the same for a record read from the run
    and one built from the file, whatever ``generated_at`` and other bookkeeping say)."""
    fields = [dp.get(name) for name in CONTENT_FIELDS]
    text = json.dumps(fields, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _native(dp: Mapping[str, Any]) -> str:
    native = dp.get(BENCHMARK_NATIVE_ID)
    return str(native) if native is not None else str(dp.get(ID, "")).rsplit("__", 1)[-1]


def _preview(dp: Mapping[str, Any]) -> str:
    text = " ".join(str(dp.get(PROMPT, "")).split())
    return repr(text if len(text) <= _PREVIEW else text[: _PREVIEW - 3] + "...")


@attrs.frozen
class RowNote:
    """One row as a person finds it: ``row 3`` (its number in the file) or ``id t3``, and
    the start of its prompt before and after."""

    label: str
    before: str = ""
    after: str = ""

    def text(self) -> str:
        shown = " -> ".join(p for p in (self.before, self.after) if p)
        return f"{self.label} {shown}" if shown else self.label


@attrs.frozen
class RowPlan:
    """What the data file asks of one task's datapoints."""

    task: str
    #: records to write, in file order: edited rows (superseding ``replaces``) and added rows
    write: tuple[dict[str, Any], ...] = ()
    replaces: frozenset[str] = frozenset()
    edited: tuple[RowNote, ...] = ()
    removed: tuple[RowNote, ...] = ()
    added: tuple[RowNote, ...] = ()
    #: ids of the ok datapoints that no row of the file is
    left_out: frozenset[str] = frozenset()


def _label(dp: Mapping[str, Any], number: int | None, by_id: bool) -> str:
    native = _native(dp)
    if by_id:
        return f"id {native}"
    if number is not None:
        return f"row {number}"
    match = _POSITIONAL.match(native)
    return f"row {int(match.group(1))}" if match else native


def _renamed(dp: dict[str, Any], native: str) -> dict[str, Any]:
    """``dp`` under another native id (a row whose row-number id a moved row holds)."""
    old = _native(dp)
    dp_id = str(dp[ID])
    return {**dp, ID: dp_id[: len(dp_id) - len(old)] + native, BENCHMARK_NATIVE_ID: native}


def _claims(rows: Sequence[dict[str, Any]], held: Mapping[str, Mapping[str, Any]], by_id: bool) -> dict[int, str]:
    """Row index -> the id of the datapoint the run holds for that row."""
    if by_id:
        return {i: str(r[ID]) for i, r in enumerate(rows) if str(r[ID]) in held}
    pool: dict[str, list[str]] = {}
    for dp_id in sorted(held):
        pool.setdefault(row_content(held[dp_id]), []).append(dp_id)
    claims: dict[int, str] = {}
    for i, row in enumerate(rows):
        ids = pool.get(row_content(row))
        if ids:
            claims[i] = ids.pop(0)
    taken = set(claims.values())
    for i, row in enumerate(rows):  # new content where a datapoint's content left: that row, edited
        if i not in claims and str(row[ID]) in held and str(row[ID]) not in taken:
            claims[i] = str(row[ID])
            taken.add(claims[i])
    return claims


def _fresh_ids(rows: list[dict[str, Any]], claims: Mapping[int, str], held: Iterable[str]) -> None:
    """Give each unclaimed row an id no datapoint has (in place)."""
    used = set(held) | set(claims.values())
    for i, row in enumerate(rows):
        if i in claims:
            continue
        if str(row[ID]) in used:
            native, n = _native(row), 2
            while (candidate := _renamed(row, f"{native}-{n}"))[ID] in used:
                n += 1
            rows[i] = candidate
        used.add(str(rows[i][ID]))


def _rank(dp: Mapping[str, Any]) -> str:
    """The order ``--limit`` picks rows in (``coeval ingest --limit``'s: a hash of the id)."""
    return hashlib.sha256(_native(dp).encode()).hexdigest()


def plan_rows(task: str, rows: Sequence[dict[str, Any]], held: Mapping[str, Mapping[str, Any]], *,
              by_id: bool, limit: int) -> RowPlan:
    """Match the file's ``rows`` (datapoint records in file order) with the ``held``
    datapoints (by id, as read from the run) and say what to write and what is left out."""
    held_ok = {k: v for k, v in held.items() if is_ok(v)}
    rows = [dict(r) for r in rows]
    claims = _claims(rows, held_ok, by_id)
    _fresh_ids(rows, claims, held_ok)
    room = max(0, limit - len(claims))
    chosen = set(claims) | set(sorted((i for i in range(len(rows)) if i not in claims),
                                      key=lambda i: _rank(rows[i]))[:room])
    write: list[dict[str, Any]] = []
    replaces: set[str] = set()
    edited: list[RowNote] = []
    added: list[RowNote] = []
    for i in sorted(chosen):
        row, number = rows[i], None if by_id else i + 1
        if i not in claims:
            write.append(row)
            added.append(RowNote(_label(row, number, by_id), after=_preview(row)))
            continue
        old = held_ok[claims[i]]
        if row_content(old) == row_content(row):
            continue
        write.append(row)
        replaces.add(str(row[ID]))
        edited.append(RowNote(_label(row, number, by_id), _preview(old), _preview(row)))
    gone = sorted(set(held_ok) - set(claims.values()))
    removed = tuple(RowNote(_label(held_ok[k], None, by_id), _preview(held_ok[k])) for k in gone)
    return RowPlan(task, tuple(write), frozenset(replaces), tuple(edited), removed, tuple(added), frozenset(gone))


def left_out_ids(meta: Mapping[str, Any]) -> frozenset[str]:
    """The datapoint ids ``meta.json`` lists as left out with their rows (none when the field
    is absent or not as written: a run from before it, or a hand-edited file)."""
    listed = meta.get(LEFT_OUT_KEY)
    if not isinstance(listed, Mapping):
        return frozenset()
    return frozenset(str(i) for ids in listed.values() if isinstance(ids, list) for i in ids if isinstance(i, str))
