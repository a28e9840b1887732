"""The run pages that live in their own modules (matrix, answer cells, search, diff,
failures): ``/r/<k>/<name>`` answered by ``PAGES[name](store, base, query)``.

The server asks here once the run's database is complete; each handler returns the HTTP
status and the HTML (a whole page, or a fragment the matrix page inserts)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from coeval_analysis.viewer import diff, failures, matrix, search
from coeval_analysis.viewer.store import RunStore

__all__ = ["PAGES", "Page"]

#: ``(store, base URL of the run, URL query) -> (HTTP status, HTML)``
Page = Callable[[RunStore, str, Mapping[str, str]], tuple[int, str]]

PAGES: dict[str, Page] = {
    "matrix": matrix.matrix_view,
    "cell": matrix.cell_view,
    "search": search.search_view,
    "diff": diff.diff_view,
    "failures": failures.failures_view,
}
