"""Hook implementations of coeval-analysis (registered through the ``coeval`` entry point).

Registers the ``analyze``, ``view``, ``export`` and ``label`` commands, the metrics ``bleu``, ``bertscore`` and ``exact_match``,
the report writers ``summary``, ``tables``, ``html`` and ``viewer``, and a run-end action
that builds the viewer's database of a big run, and the evaluation controller ``adaptive`` that
decides an adaptive run's rounds of phase 5. Imports stay light: pandas,
plotly and torch load only when a command or metric runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coeval.contract.hookspecs import hookimpl

if TYPE_CHECKING:
    from coeval import RegisterMetric, RegisterReport, RegisterRunEnd


@hookimpl
def register_commands(cli: Any) -> None:
    from coeval_analysis.cli import analyze_command

    cli.add_command(analyze_command)
    from coeval_analysis.viewer.cli import export_command, view_command

    cli.add_command(view_command)
    cli.add_command(export_command)
    from coeval_analysis.labels.cli import label_command

    cli.add_command(label_command)


@hookimpl
def register_metrics(register: RegisterMetric) -> None:
    from coeval_analysis.metrics import STANDARD_METRICS

    for name, factory in STANDARD_METRICS.items():
        register(name, factory)


@hookimpl
def register_reports(register: RegisterReport) -> None:
    from coeval_analysis.reports import OPTIONAL_REPORTS, lazy_writers

    for name, writer in lazy_writers().items():
        register(name, writer, default=name not in OPTIONAL_REPORTS)


@hookimpl
def register_run_end(register: RegisterRunEnd) -> None:
    from coeval_analysis.viewer.prebuild import prebuild

    register("viewer-database", prebuild)


@hookimpl
def register_evaluation_controllers(register: Any) -> None:
    register("adaptive", _adaptive_controller)


def _adaptive_controller() -> Any:
    """The controller, imported when an adaptive run reaches phase 5 (numpy and scipy then)."""
    from coeval_analysis.adaptive.controller import AdaptiveController

    return AdaptiveController()
