"""Report writers: ``writer(analysis, out_dir) -> list[Path]``, registered through
``register_reports`` (see coeval_analysis.plugin): :mod:`.summary` writes ``summary.json``,
:mod:`.tables` the CSV and Parquet tables, and :mod:`.html` the report, whose page
(:mod:`.page`) is made of the sections of the ``*_section(s)`` modules, :mod:`.figures` and
:mod:`.blocks`, from the jinja2 templates in ``templates/``."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["OPTIONAL_REPORTS", "STANDARD_REPORTS", "lazy_writers"]

#: name -> "module:function", in the order `coeval analyze` runs them
STANDARD_REPORTS = {
    "summary": "coeval_analysis.reports.summary:write_summary",
    "tables": "coeval_analysis.reports.tables:write_tables",
    "html": "coeval_analysis.reports.html:write_html",
    "viewer": "coeval_analysis.viewer.prebuild:write_viewer_cache",
}
#: written only when ``--report`` names them: building the viewer's database of a run of
#: 1,000,000 judge records adds about two thirds of the analysis's own CPU time
#: (``coeval run`` already builds it when a big run ends)
OPTIONAL_REPORTS = frozenset({"viewer"})


def lazy_writers() -> dict[str, Callable[[Any, Path], list[Path]]]:
    """Writers that import their module (pandas, jinja2...) only when called."""

    def make(target: str) -> Callable[[Any, Path], list[Path]]:
        module, func = target.split(":")

        def writer(analysis: Any, out_dir: Path) -> list[Path]:
            written: list[Path] = getattr(importlib.import_module(module), func)(analysis, out_dir)
            return written

        writer.__name__ = func
        writer.__doc__ = f"Lazy wrapper of {target}."
        return writer

    return {name: make(target) for name, target in STANDARD_REPORTS.items()}
