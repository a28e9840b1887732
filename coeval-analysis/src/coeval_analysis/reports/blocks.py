"""The report's building blocks: sections of text, key figures, charts and tables.

Kept apart from the page builder so that section modules (item quality, viewer links) can
build sections without importing the builder that imports them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from markupsafe import Markup

__all__ = ["Figure", "KeyFigures", "Section", "Table", "Text", "cell", "fmt"]


@dataclass
class Table:
    columns: list[tuple[str, str]]  # (key, header)
    rows: list[dict[str, Any]]
    caption: str = ""
    kind: str = "table"

    def cells(self) -> list[list[tuple[str, str, bool]]]:
        """(shown text, sort key, is a number) per cell."""
        out = []
        for row in self.rows:
            out.append([cell(row.get(key)) for key, _ in self.columns])
        return out


@dataclass
class Figure:
    id: str
    spec: dict[str, Any]
    height: int = 380
    kind: str = "figure"


@dataclass
class Text:
    html: Markup
    kind: str = "text"


@dataclass
class KeyFigures:
    items: list[tuple[str, str]]
    kind: str = "keys"


@dataclass
class Section:
    id: str
    title: str
    intro: str = ""
    blocks: list[Any] = field(default_factory=list)


def fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool | np.bool_):
        return "yes" if v else "no"
    if isinstance(v, int | np.integer):
        return f"{int(v):,}"
    if isinstance(v, float | np.floating):
        if not np.isfinite(v):
            return "—"
        return f"{float(v):.{digits}f}"
    if (
        isinstance(v, list | tuple)
        and len(v) == 2
        and all(isinstance(x, int | float | type(None)) for x in v)
    ):
        return f"[{fmt(v[0], digits)}, {fmt(v[1], digits)}]"
    return str(v)


def cell(v: Any) -> tuple[str, str, bool]:
    if (
        isinstance(v, list | tuple)
        and len(v) == 2
        and all(isinstance(x, int | float | type(None)) for x in v)
    ):
        first = v[0]
        return fmt(v), "" if first is None else repr(float(first)), True
    if isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool | np.bool_):
        f = float(v)
        return fmt(v), repr(f) if np.isfinite(f) else "", True
    return fmt(v), "" if v is None else str(v), False
