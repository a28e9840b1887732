"""coeval-analysis: the headline ranking, judge agreement, reports, metrics and label scoring.

Library use::

    from coeval_analysis import analyze, load_run
    from coeval_analysis.leaderboard import leaderboard
    analysis = analyze(load_run("eval_runs/demo-v1"))
    leaderboard(analysis.summary)["rows"]

See plugin.py for what this distribution registers with CoEval.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["Analysis", "AnalysisOptions", "RunData", "analyze", "load_run"]

if TYPE_CHECKING:
    from coeval_analysis.analysis import Analysis, AnalysisOptions, analyze
    from coeval_analysis.loading.loader import load_run
    from coeval_analysis.loading.run_data import RunData


def __getattr__(name: str) -> Any:
    # keep `import coeval_analysis` light (plugin discovery imports the package)
    if name in ("Analysis", "AnalysisOptions", "analyze"):
        from coeval_analysis import analysis

        return getattr(analysis, name)
    if name == "RunData":
        from coeval_analysis.loading.run_data import RunData

        return RunData
    if name == "load_run":
        from coeval_analysis.loading.loader import load_run

        return load_run
    raise AttributeError(name)
