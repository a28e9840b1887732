"""Read many JSONL files into one Arrow table, fast and forgivingly.

DuckDB's JSON reader parses the files on all cores about twice as fast as pyarrow's and
converts any JSON value to the column type asked for (a number to text, an object to its
JSON text), so records whose fields change type between lines still load. Lines that are
not JSON objects (a crash can cut the last line of a file) become rows of nulls, which are
dropped and counted. Rows keep file order and line order, which "the last record of an id
wins" depends on. If DuckDB cannot read a file at all, that file is read line by line in
Python with the same rules.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from coeval.storage.safe_files import open_regular

__all__ = ["JSON_TEXT", "MAP", "TEXT", "Computed", "map_entries", "read_records"]

TEXT = "VARCHAR"
JSON_TEXT = "JSON"
MAP = "MAP(VARCHAR, VARCHAR)"

_ARROW_TYPES = {TEXT: pa.string(), JSON_TEXT: pa.string(), MAP: pa.map_(pa.string(), pa.string())}
_MAX_OBJECT = 64 << 20


@dataclass(frozen=True)
class Computed:
    """A column worked out per record while reading: DuckDB SQL over the read fields, and
    the same rule in Python over the whole record, for files DuckDB cannot read."""

    sql: str
    python: Callable[[Mapping[str, Any]], Any]
    arrow_type: pa.DataType


#: ``computed`` columns: DuckDB SQL (``length(f)``, ``hash(f)``), or a :class:`Computed`
ComputedColumns = Mapping[str, "str | Computed"]


def _sql(expr: str | Computed) -> str:
    return expr.sql if isinstance(expr, Computed) else expr


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _query(
    files: Sequence[Path], columns: Mapping[str, str], computed: ComputedColumns, hidden: Sequence[str]
) -> str:
    spec = ", ".join(f"{_sql_text(name)}: {_sql_text(kind)}" for name, kind in columns.items())
    select = [f'"{name}"' for name in columns if name not in hidden]
    select += [f'{_sql(expr)} AS "{name}"' for name, expr in computed.items()]
    paths = ", ".join(_sql_text(str(p)) for p in files)
    return (
        f"SELECT {', '.join(select)} FROM read_json([{paths}], format='newline_delimited', records=true, "
        f"ignore_errors=true, maximum_object_size={_MAX_OBJECT}, columns={{{spec}}})"
    )


def read_records(
    files: Sequence[Path],
    columns: Mapping[str, str],
    computed: ComputedColumns | None = None,
    hidden: Sequence[str] = (),
) -> tuple[pa.Table, int]:
    """(records of ``files`` in file and line order, number of lines that were not records).

    ``columns``: field -> TEXT | JSON_TEXT | MAP; ``computed``: extra columns as DuckDB SQL
    over those fields (e.g. ``{"length": "length(response)"}``) or :class:`Computed`; ``hidden``: fields read for
    ``computed`` only, not returned (long texts stay out of memory).
    """
    computed = dict(computed or {})
    schema = pa.schema([(n, _ARROW_TYPES[k]) for n, k in columns.items() if n not in hidden])
    if not files:
        return _empty(schema, computed), 0
    for path in files:  # DuckDB would wait on a FIFO for ever: each must be a regular file
        open_regular(path).close()
    import duckdb

    unreadable = (duckdb.IOException, duckdb.InvalidInputException, duckdb.ConversionException)
    con = duckdb.connect()
    try:
        con.execute("SET preserve_insertion_order = true")
        try:
            table = _duck_read(con, files, columns, computed, hidden)
        except unreadable:
            # file by file; a file DuckDB cannot read at all is read in Python. Hashes
            # would then come from two functions, so they are dropped (the loader falls
            # back to comparing ids as text).
            tables = []
            hashes = [n for n, e in computed.items() if _sql(e).startswith("hash(")]
            for path in files:
                try:
                    part = _duck_read(con, [path], columns, computed, hidden)
                except unreadable:
                    part = _read_slow(path, columns, computed, hidden)
                tables.append(part.drop_columns([h for h in hashes if h in part.column_names]))
            table = pa.concat_tables([t.cast(tables[0].schema) for t in tables])
    finally:
        con.close()
    return _drop_bad_rows(table, [n for n in columns if n not in hidden])


def _duck_read(
    con: Any,
    files: Sequence[Path],
    columns: Mapping[str, str],
    computed: ComputedColumns,
    hidden: Sequence[str],
) -> pa.Table:
    return con.sql(_query(files, columns, computed, hidden)).to_arrow_table()


def _computed_type(expr: str | Computed) -> pa.DataType:
    if isinstance(expr, Computed):
        return expr.arrow_type
    return pa.uint64() if expr.startswith("hash(") else pa.int64()


def _empty(schema: pa.Schema, computed: ComputedColumns) -> pa.Table:
    extra = [(n, _computed_type(expr)) for n, expr in computed.items()]
    return pa.schema([*schema, *extra]).empty_table()


def _drop_bad_rows(table: pa.Table, fields: list[str]) -> tuple[pa.Table, int]:
    """Rows with every field null are lines that were not JSON objects."""
    if table.num_rows == 0:
        return table, 0
    some = None
    for name in fields:
        valid = pc.is_valid(table.column(name))
        some = valid if some is None else pc.or_(some, valid)
    assert some is not None
    n_bad = table.num_rows - int(pc.sum(some).as_py() or 0)
    return (table.filter(some) if n_bad else table), n_bad


def _read_slow(
    path: Path, columns: Mapping[str, str], computed: ComputedColumns, hidden: Sequence[str]
) -> pa.Table:
    """Line by line with the standard json module: the same columns and rules."""
    in_python = {n: e for n, e in computed.items() if isinstance(e, Computed)}
    rows: list[dict[str, Any]] = []
    with io.TextIOWrapper(open_regular(path), encoding="utf-8", errors="replace") as fh:  # never a FIFO
        for line in fh:
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except (json.JSONDecodeError, RecursionError):  # a line nested too deep is a bad line
                rec = None
            if not isinstance(rec, dict):
                rows.append(dict.fromkeys([*columns, *in_python]))
                continue
            row = {name: _convert(rec.get(name), kind) for name, kind in columns.items()}
            row.update({name: expr.python(rec) for name, expr in in_python.items()})
            rows.append(row)
    schema = pa.schema(
        [(n, _ARROW_TYPES[k]) for n, k in columns.items()] + [(n, e.arrow_type) for n, e in in_python.items()]
    )
    table = pa.Table.from_pylist(rows, schema=schema)
    for name, expr in computed.items():
        if isinstance(expr, Computed):
            continue
        # the loader asks for length(field) and hash(field)
        field = expr[expr.index("(") + 1 : expr.index(")")]
        if expr.startswith("length("):
            table = table.append_column(name, pc.cast(pc.utf8_length(table.column(field)), pa.int64()))
        elif not expr.startswith("hash("):  # hashes are dropped by the caller
            raise ValueError(f"cannot compute {expr!r} without DuckDB")
    order = [n for n in columns if n not in hidden] + [n for n in computed if n in table.column_names]
    return table.select(order)  # DuckDB's order: the read fields, then the computed ones


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _convert(value: Any, kind: str) -> Any:
    if value is None:
        return None
    if kind == MAP:
        if not isinstance(value, dict):
            return None
        return [(str(k), _text(v)) for k, v in value.items()]
    if kind == JSON_TEXT:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return _text(value)


def map_entries(col: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, pa.Array, pa.Array]:
    """(row index, keys, values) of every entry of a map column, in row order."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if len(arr) == 0:
        return np.zeros(0, np.int64), pa.array([], pa.string()), pa.array([], pa.string())
    off = arr.offsets.to_numpy().astype(np.int64)
    rows = np.repeat(np.arange(len(arr), dtype=np.int64), np.diff(off))
    start, stop = int(off[0]), int(off[-1])
    keys = arr.keys.slice(start, stop - start)
    values = arr.items.slice(start, stop - start)
    if arr.null_count:
        valid = arr.is_valid().to_numpy(zero_copy_only=False)[rows]
        if not valid.all():
            mask = pa.array(valid)
            rows, keys, values = rows[valid], keys.filter(mask), values.filter(mask)
    return rows, keys, values
