"""``coeval analyze``: rankings, judge agreement and diagnostics of a run, as an HTML report,
``summary.json`` and CSV/Parquet tables."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import click
from coeval.cli.errors import ERROR_PREFIX, report_user_error
from coeval.cli.verbosity import command_logging, verbosity, verbosity_options
from coeval.plugins.manager import collect
from coeval.storage.safe_files import apply_file_mode

from coeval_analysis.errors import AnalysisInputError
from coeval_analysis.output.staged import staged_output

__all__ = ["analyze_command"]

_STAGES = ("load", "scores", "robust ranking", "judge agreement", "teachers and diagnostics", "reports")


def _run_folder(run_path: Path | None, config_path: str | None) -> Path:
    """``--run``, or the folder ``--config`` names; exit 2 with the core's message otherwise."""
    from coeval.cli.config_arg import run_path_from
    try:
        return Path(run_path_from(str(run_path) if run_path else None, config_path))
    except Exception as exc:
        code = report_user_error(exc)
        if code is None:
            raise
        raise SystemExit(code) from None


@click.command("analyze", short_help="Rank the students of a run: a verdict, an HTML report, summary.json, tables.")
@click.option(
    "--run",
    "run_path",
    type=click.Path(path_type=Path, file_okay=False),
    help="Run folder: {storage_folder}/{experiment_id}, ours or the earlier CoEval's.",
)
@click.option("--config", "config_path", metavar="PATH", help="Or the experiment YAML: its run folder is analysed.")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Where to write report.html, summary.json and tables/ (default: RUN/analysis).",
)
@click.option(
    "--bootstrap",
    "n_boot",
    type=click.IntRange(0, 100_000),
    default=1000,
    show_default=True,
    help="Bootstrap resamples of datapoints for the intervals (0: no intervals).",
)
@click.option(
    "--level",
    type=click.FloatRange(0.5, 0.999),
    default=0.95,
    show_default=True,
    help="Confidence level of the intervals.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap resamples.")
@click.option(
    "--report",
    "reports",
    multiple=True,
    metavar="NAME",
    help="Write only these reports (repeatable): summary, tables, html, viewer (the viewer's database of a "
    "big run, built ahead; only when asked), or a plugin's. Default: all but viewer.",
)
@click.option(
    "--common-items",
    is_flag=True,
    help="Also rank students on the datapoints every student has a score on (added anyway when "
    "students' missing-answer rates differ by more than 5 points).",
)
@click.option(
    "--drop-degenerate-judges",
    is_flag=True,
    help="Leave judges whose replies are mostly degenerate (one level for every factor without a "
    "reason, or the prompt's example copied) out of the ranking; see docs/item-quality.md.",
)
@verbosity_options
def analyze_command(quiet: bool, verbose: bool, **options: Any) -> None:
    """Analyse a run and print its verdict: the leaderboard (the places the data allow, the
    headline with its interval, one column per kind of evidence: judged score, checks,
    pass@1 / pass@k), the tiers, how the headline is combined, and at most three warnings
    with their actions. -v prints every warning, note and data-quality count too. The report,
    summary.json and tables hold everything else: judge agreement, teachers, bias, coverage
    and failures. See docs/analysis.md.

    Duplicate, failed and incomplete records are handled by fixed rules and counted in
    summary.json (data_quality).

    Example: coeval analyze --run eval_runs/demo-v1 --out reports/demo
    """
    with command_logging(verbosity(quiet, verbose)):
        _analyze(quiet=quiet, verbose=verbose, **options)


def _analyze(
    *,
    run_path: Path | None,
    config_path: str | None,
    out_dir: Path | None,
    n_boot: int,
    level: float,
    seed: int,
    reports: tuple[str, ...],
    common_items: bool,
    drop_degenerate_judges: bool,
    quiet: bool,
    verbose: bool = False,
) -> None:
    """The body of ``coeval analyze``, run inside the chosen console log level."""
    from coeval_analysis.analysis import AnalysisOptions, analyze
    from coeval_analysis.loading.loader import load_run

    run_path = _run_folder(run_path, config_path)
    writers, optional = _report_writers()
    unknown = [r for r in reports if r not in writers]
    if unknown:
        raise click.BadParameter(
            f"unknown report {', '.join(unknown)}; installed: {', '.join(writers) or 'none'}",
            param_hint="--report",
        )
    chosen = {name: writers[name] for name in (reports or [w for w in writers if w not in optional])}
    out = out_dir or run_path / "analysis"
    started = time.perf_counter()
    progress = _progress(quiet)
    try:
        with progress:
            task = progress.add_task("load", total=len(_STAGES))
            data = load_run(run_path)
            progress.update(task, advance=1)

            def step(name: str) -> None:
                progress.update(task, description=name, completed=min(_STAGES.index(name), len(_STAGES)))

            options = AnalysisOptions(
                n_boot=n_boot, seed=seed, level=level, common_items=common_items,
                drop_degenerate_judges=drop_degenerate_judges,
            )
            analysis = analyze(data, options, progress=step)
            progress.update(task, description="reports", completed=len(_STAGES) - 1)
            try:
                out.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise AnalysisInputError(f"{out}: cannot create the output folder ({exc.strerror})") from None
            written: list[Path] = []
            with staged_output(out) as target:  # whole or not at all: a kill never mixes old and new
                for writer in chosen.values():
                    written += list(writer(analysis, target) or [])
            written = [out / p.relative_to(target) if p.is_relative_to(target) else p for p in written]
            for path in written:  # one mode for every file in a run folder: docs/security.md
                apply_file_mode(Path(path))
            progress.update(task, completed=len(_STAGES))
    except AnalysisInputError as exc:
        click.echo(f"{ERROR_PREFIX} {exc}", err=True)
        sys.exit(exc.exit_code)
    warning = analysis.summary.get("run_warning")
    if warning:
        click.echo(f"Note: {warning}", err=True)
    for entry in analysis.summary.get("warnings") or []:
        if isinstance(entry, dict) and entry.get("kind") == "degenerate_judge_dropped":
            click.echo(f"Note: {entry['message']}", err=True)
    if not quiet:
        _print_verdict(analysis.summary, verbose)
        if analysis.summary.get("adaptive"):
            from coeval_analysis.adaptive.run_record import adaptive_console_lines

            for line in adaptive_console_lines(analysis.summary["adaptive"]):
                click.echo(line)
        _print_written(out, written, time.perf_counter() - started, analysis.summary["n_records"])


def _print_written(out: Path, written: list[Path], seconds: float, n_records: int) -> None:
    """One line: how long it took and where the report, summary.json and tables are."""
    from coeval_analysis.leaderboard.verdict import console_width

    names = [p.name for p in written if p.parent == out and p.name in ("report.html", "summary.json")]
    names += ["tables/"] if (out / "tables").exists() else []
    where = f"{out}{os.sep}" + (f"{{{', '.join(names)}}}" if len(names) > 1 else "".join(names))
    for line in textwrap.wrap(f"Analysed {n_records:,} judge records in {seconds:.1f} s: {where}",
                              console_width(), subsequent_indent="  ", break_on_hyphens=False):
        click.echo(line)


def _report_writers() -> tuple[dict[str, Any], set[str]]:
    """Report writers of every plugin and the names of those run only when asked for
    (registered with ``default=False``). Only the ``register_reports`` hook is called
    (``registries()`` would also set up interfaces and evaluators, which analysis does not
    need); a name registered twice is an error, as in every registry."""
    reports = collect("register_reports")
    writers = {entry.name: entry.value for entry in reports}
    optional = {entry.name for entry in reports if entry.options.get("default") is False}
    return writers, optional


class _NoProgress:
    def __enter__(self) -> _NoProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add_task(self, *a: object, **kw: object) -> int:
        return 0

    def update(self, *a: object, **kw: object) -> None:
        return None


def _progress(quiet: bool) -> Any:
    if quiet:
        return _NoProgress()
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description:<26}"),
        BarColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )


def _print_verdict(summary: dict[str, Any], verbose: bool) -> None:
    """The leaderboard, tiers, how the headline is combined and the first warnings
    (everything with ``-v``): :mod:`coeval_analysis.leaderboard.verdict`."""
    from coeval_analysis.leaderboard.verdict import console_width, verdict_lines

    for line in verdict_lines(summary, console_width(), verbose=verbose):
        click.echo(line)
