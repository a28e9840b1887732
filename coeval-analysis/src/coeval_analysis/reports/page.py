"""What every section builder of the HTML report reads (:class:`PageContext`): the summary,
the tables, the confidence level, and the figures collected so far."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from coeval_analysis.reports.blocks import Figure

__all__ = ["PageContext"]


@dataclass
class PageContext:
    """What every section builder reads: the JSON-ready summary, the tables, the confidence
    level as text, and the figure specs collected so far (one JSON island per page)."""

    summary: dict[str, Any]
    tables: dict[str, Any]
    pct: str
    figs: dict[str, Any] = field(default_factory=dict)

    def fig(self, fid: str, spec: dict[str, Any] | None, height: int = 380) -> Figure | None:
        """Register a chart and return its block (None when there is nothing to draw)."""
        if spec is None:
            return None
        self.figs[fid] = spec
        return Figure(fid, spec, height)
