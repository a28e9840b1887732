"""``coeval analyze``: rankings, judge agreement and diagnostics of a run, as an HTML report,
``summary.json`` and CSV/Parquet tables."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click
from coeval.cli.errors import ERROR_PREFIX, report_user_error
from coeval.cli.verbosity import command_logging, verbosity, verbosity_options
from coeval.contract.manager import collect
from coeval.storage.safe_files import apply_file_mode

from coeval_analysis.errors import AnalysisInputError
from coeval_analysis.staged import staged_output

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


@click.command("analyze", short_help="Rank the students of a run; write an HTML report, summary.json and tables.")
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
    """Analyse a run: student ranking with bootstrap intervals and a conflict-aware robust
    ranking (a judge's scores of its own family left out; judges and datapoints weighted),
    pairwise comparisons with rank ranges, warnings, judge agreement (kappa, Krippendorff's
    alpha, ICC), teacher discrimination, self-preference, verbosity, coverage and failures.

    Duplicate, failed and incomplete records are handled by fixed rules and counted in
    summary.json (data_quality); see docs/analysis.md.

    Example: coeval analyze --run eval_runs/demo-v1 --out reports/demo
    """
    with command_logging(verbosity(quiet, verbose)):
        _analyze(quiet=quiet, **options)


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
) -> None:
    """The body of ``coeval analyze``, run inside the chosen console log level."""
    from coeval_analysis.analysis import AnalysisOptions, analyze
    from coeval_analysis.loader import load_run

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
        _print_ranking(analysis.summary)
        click.echo(
            f"Analysed {analysis.summary['n_records']:,} judge records in {time.perf_counter() - started:.1f} s."
        )
        for path in written:
            if path.name in ("report.html", "summary.json"):
                click.echo(f"  {path}")
        click.echo(f"  {out / 'tables'}/ (CSV and Parquet)" if (out / "tables").exists() else "")


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


def _print_ranking(summary: dict[str, Any]) -> None:
    """The headline ranking with rank ranges (tied students share one), the plain mean
    beside it, then the warnings."""
    from coeval.console import output_console
    from coeval.console.text import markup_safe, plain
    from rich.table import Table

    def f(x: float | None) -> str:
        return "—" if x is None else f"{x:.3f}"

    table = Table(title=f"{markup_safe(str(summary['experiment_id']))}: students", title_justify="left")
    ci = f"{summary['settings']['level'] * 100:g}% CI"
    for col in ("#", "student", "robust", ci, "mean", f"{ci} ", "unscored answers", "failed judgments"):
        table.add_column(col, justify="left" if col == "student" else "right", no_wrap=col != "student")
    students = summary["students"]
    for name, s in students.items():
        missing = s.get("n_failed", 0) + s.get("n_unjudged", 0)
        table.add_row(
            s.get("rank_label") or "—",
            markup_safe(name),  # ids come from the run folder: text, not markup
            f(s["robust_score"]),
            f"[{f(s['robust_ci'][0])}, {f(s['robust_ci'][1])}]",
            f(s["score"]),
            f"[{f(s['ci'][0])}, {f(s['ci'][1])}]",
            f"{missing}/{s.get('n_answers', 0)}" if missing else "",
            f"{s['n_judgments_failed']}/{s['n_judgments']}" if s.get("n_judgments_failed") else "",
        )
    if any(s["robust_score"] is not None for s in students.values()):
        output_console().print(table)
        click.echo(
            "robust: the headline (judges weighted by how well they tell answers apart; family bias "
            "estimated, or bounded by a prior); mean: every judgment counts equally; "
            "'4-5': the ranks the data allow."
        )
    elif any(s["score"] is not None for s in students.values()):
        output_console().print(table)
        click.echo("mean: every judgment counts equally; no conflict-aware score (see the warning below).")
    else:
        if students:
            output_console().print(table)
        click.echo(
            "No usable score in this run: every record failed or could not be used (see data quality)."
        )
    for note in summary.get("headline_notes") or []:
        click.echo(f"note: {note}")
    for w in summary.get("warnings", []):
        click.echo(f"warning: {plain(w['message'])}")
    if summary.get("reference"):  # human labels and gold: how many, and how many more would settle it
        click.echo(plain(summary["reference"]["line"]))
    q = summary["data_quality"]
    click.echo(
        f"records {q['n_records']:,}; failed {q['n_failed']:,}; duplicates dropped {q['n_duplicates']:,}; "
        f"orphaned {q['n_orphaned']:,}; incomplete {q['n_incomplete']:,}"
    )
