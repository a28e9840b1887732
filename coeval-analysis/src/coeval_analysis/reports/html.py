"""The self-contained HTML report: one file, plotly.js embedded once, no network access.

The page is built from the analysis summary and tables only (nothing is recomputed), as a
list of sections, each a list of blocks (text, key figures, a chart, a sortable table).
Charts are plotly figure specs in one JSON island, drawn by the page's own script, so the
file works from ``file://`` with no CDN and no server.

The sections are built in :mod:`~coeval_analysis.reports.student_sections`,
:mod:`~coeval_analysis.reports.judge_sections` and :mod:`~coeval_analysis.reports.data_sections`
(and a few modules of their own); this module puts them in page order and writes the file.
"""

from __future__ import annotations

import html
import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from coeval_analysis.reports.blocks import Section
from coeval_analysis.reports.checks_section import checks_section
from coeval_analysis.reports.data_sections import (
    coverage_section,
    quality_section,
    references_section,
    warnings_section,
)
from coeval_analysis.reports.item_quality import item_quality_section
from coeval_analysis.reports.judge_sections import (
    agreement_section,
    bias_section,
    judges_section,
    teachers_section,
)
from coeval_analysis.reports.page import PageContext
from coeval_analysis.reports.reference_section import reference_section
from coeval_analysis.reports.student_sections import (
    breakdowns_section,
    comparisons_section,
    missing_section,
    overview_section,
    ranking_section,
)
from coeval_analysis.reports.summary import to_jsonable
from coeval_analysis.reports.viewer_links import viewer_section

if TYPE_CHECKING:
    from coeval_analysis.analysis import Analysis

__all__ = ["build_page", "write_html"]


def plotly_js() -> str:
    """The plotly.js bundle shipped inside the ``plotly`` package (no download; the Python
    package itself is not imported)."""
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the plotly package is not installed (pip install plotly)")
    folder = Path(next(iter(spec.submodule_search_locations)))
    return (folder / "package_data" / "plotly.min.js").read_text(encoding="utf-8")


#: the report's sections in page order; a branch adds one with a one-line edit here
SECTIONS: list[Callable[[PageContext], Section | None]] = [
    ranking_section,  # the leaderboard first, with the warnings that change it most
    overview_section,
    comparisons_section,
    warnings_section,  # every warning and note, below the answer
    missing_section,
    breakdowns_section,
    judges_section,
    agreement_section,
    teachers_section,
    item_quality_section,
    bias_section,
    coverage_section,
    references_section,
    reference_section,
    checks_section,
    quality_section,
    viewer_section,
]


def build_page(analysis: Analysis) -> tuple[list[Section], dict[str, Any]]:
    """The page's sections (those with something to show) and its figure specs."""
    s = to_jsonable(analysis.summary)
    ctx = PageContext(s, analysis.tables, f"{s['settings']['level'] * 100:g}%")
    sections = [sec for build in SECTIONS if (sec := build(ctx)) is not None]
    return sections, ctx.figs


#: characters an HTML parser reads inside ``<script>`` (``</script>``, ``<!--``) or that end a
#: JavaScript line: written as JSON ``\\u`` escapes, which JSON.parse reads back unchanged
_SCRIPT_UNSAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                                "\u2028": "\\u2028", "\u2029": "\\u2029"})


#: figure keys whose value is plotly markup the report writes itself (the rest is data)
_PLOTLY_TEMPLATES = frozenset({"hovertemplate", "texttemplate"})


def _json_island(obj: Any) -> Markup:
    text = json.dumps(to_jsonable(obj), ensure_ascii=False, separators=(",", ":"))
    return Markup(text.translate(_SCRIPT_UNSAFE))


def _plain_labels(value: Any, key: str = "") -> Any:
    """Figure specs with every label as plain text: plotly reads ``<a href>``, ``<b>``... in
    strings as markup, and labels come from the run (model names, attribute values).
    ``&``, ``<`` and ``>`` become entities, which plotly shows as the characters."""
    if isinstance(value, dict):
        return {k: _plain_labels(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain_labels(v, key) for v in value]
    if isinstance(value, str) and key not in _PLOTLY_TEMPLATES:
        return html.escape(value, quote=False)
    return value


def write_html(analysis: Analysis, out_dir: Path) -> list[Path]:
    env = Environment(
        loader=PackageLoader("coeval_analysis.reports", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
    )
    sections, figs = build_page(analysis)
    page = env.get_template("report.html.j2").render(
        title=f"CoEval analysis: {analysis.summary['experiment_id']}",
        summary=analysis.summary,
        sections=sections,
        figures=_json_island(_plain_labels(figs)),
        plotly_js=Markup(plotly_js()),
    )
    path = Path(out_dir) / "report.html"
    path.write_text(page, encoding="utf-8")
    return [path]
