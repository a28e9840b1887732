"""coeval-analysis: the headline ranking, judge agreement, reports, metrics and label scoring.

Library use::

    from coeval_analysis import analyze, load_run
    from coeval_analysis.leaderboard import leaderboard
    analysis = analyze(load_run("eval_runs/demo-v1"))
    leaderboard(analysis.summary)["rows"]

See plugin.py for what this distribution registers with CoEval. At the root: the package's
public face, ``plugin``, ``coeval analyze`` (``cli``), :func:`analyze` (``analysis``), the
user-facing error (``errors``) and the reference metrics (``metrics``). The rest lives in
packages named for what they hold: ``loading`` (a run folder into ``RunData``), ``ranking``
(the headline ranking), ``stats`` (the estimators), ``warnings`` (findings that change how
far to trust a ranking), ``leaderboard`` (the ranking every surface shows, and the console
verdict), ``labels`` (human labels, label suggestions, label tasks), ``items`` (what the
summary says of teachers' datapoints), ``reports`` (summary.json, tables, the HTML report),
``output`` (writing output safely), ``viewer`` (``coeval view`` and ``export``) and
``adaptive`` (adaptive evaluation's designs).
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
