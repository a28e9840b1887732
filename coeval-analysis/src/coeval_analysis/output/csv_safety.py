"""CSV cells that a spreadsheet would run as a formula, neutralised.

Model output, model names and attribute values come from the run, and a spreadsheet opening
a CSV runs a cell that starts with ``=``, ``+``, ``-``, ``@``, tab or carriage return as a
formula (``=HYPERLINK(...)``, DDE payloads). As OWASP advises, such text cells get a leading
``'``, which spreadsheets show as text; numbers are never changed (a negative number stays a
number). Parquet and JSONL keep the text exactly. ``coeval label --export`` writes its
sheet through :func:`neutralise_text` and its import takes the ``'`` off again
(:func:`restore_text`). docs/security.md says so.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pyarrow is imported on use: `coeval export` and `--help` must start fast
    import pyarrow as pa

__all__ = ["FORMULA_PATTERN", "neutralise_arrow", "neutralise_sql", "neutralise_text", "restore_text"]

#: RE2 (Arrow and DuckDB): a text starting like a formula
FORMULA_PATTERN = r"^([=+@\x09\x0d-])"


def neutralise_arrow(table: pa.Table) -> pa.Table:
    """``table`` with every text column's formula-like cells prefixed by ``'``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for i, field in enumerate(table.schema):
        kind = field.type
        if pa.types.is_dictionary(kind) and _is_text(kind.value_type):
            column = pc.cast(table.column(i), kind.value_type)
        elif _is_text(kind):
            column = table.column(i)
        else:
            continue
        safe = pc.replace_substring_regex(column, pattern=FORMULA_PATTERN, replacement=r"'\1")
        table = table.set_column(i, pa.field(field.name, safe.type, field.nullable), safe)
    return table


def _is_text(kind: pa.DataType) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind))


def neutralise_sql(column: str) -> str:
    """DuckDB expression: the text column ``column`` with formula-like values prefixed by ``'``."""
    return f"regexp_replace({column}, '{FORMULA_PATTERN}', '''\\1')"


_FORMULA_START = re.compile(FORMULA_PATTERN)


def neutralise_text(text: str) -> str:
    """One cell written by Python's csv module: ``text`` with a leading ``'`` when it starts
    like a formula and is not a number."""
    if _FORMULA_START.match(text) and not _is_number(text):
        return "'" + text
    return text


def restore_text(text: str) -> str:
    """A cell read back from a sheet that :func:`neutralise_text` wrote: the ``'`` taken
    off again (a spreadsheet may also have dropped it, which changes nothing)."""
    if text.startswith("'") and _FORMULA_START.match(text[1:]) and not _is_number(text[1:]):
        return text[1:]
    return text


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
