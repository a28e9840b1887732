"""``coeval label``: human labels of a run's answers in and out as CSV, for labelling in a
spreadsheet or by a team (the viewer's Label page writes the same records)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import click
from coeval.cli.errors import ERROR_PREFIX
from coeval.console.text import plain

__all__ = ["label_command"]

_MAX_ERRORS_SHOWN = 20


def _say(text: str) -> None:
    """A line on stderr without control characters: ids and paths come from the CSV and the
    run, which someone else may have written (docs/security.md, The console)."""
    click.echo(plain(text), err=True)


def _fail(lines: list[str]) -> NoReturn:
    for line in lines[:_MAX_ERRORS_SHOWN]:
        _say(f"{ERROR_PREFIX} {line}")
    if len(lines) > _MAX_ERRORS_SHOWN:
        click.echo(f"... and {len(lines) - _MAX_ERRORS_SHOWN} more", err=True)
    click.echo("Nothing was written.", err=True)
    sys.exit(2)


@click.command("label", short_help="Import or export human labels of a run's answers as CSV.")
@click.option("--run", "run", required=True, type=click.Path(path_type=Path, file_okay=False, exists=True),
              help="Run folder.")
@click.option("--import", "import_csv", type=click.Path(path_type=Path, dir_okay=False, exists=True), default=None,
              help="CSV with columns datapoint_id,student,factor,level[,labeler] to add to RUN/human_labels.jsonl.")
@click.option("--export", "export_csv", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write the answers worth labelling next, with prompt, answer and reference, to fill in.")
@click.option("--labeler", default=None, help="Labeller name for rows without a labeler column (import), or to "
              "prefill it (export).")
@click.option("-n", "--count", type=click.IntRange(1, 100_000), default=20, show_default=True,
              help="Answers to export (each gives one row per rubric factor).")
def label_command(run: Path, import_csv: Path | None, export_csv: Path | None, labeler: str | None, count: int) -> None:
    """Import labels from a CSV (every row is checked first: an unknown id, student,
    factor or level names its line and the allowed values, exits 2 and writes nothing;
    rows with an empty level are skipped), or export the answers whose labels would most
    narrow the ranking's undetermined comparisons (see docs/analysis.md).

    Examples: coeval label --run eval_runs/demo-v1 --export next.csv --labeler ana;
    coeval label --run eval_runs/demo-v1 --import next.csv
    """
    from coeval_analysis.errors import AnalysisInputError
    from coeval_analysis.labels.human_labels import run_labels, save_labels
    from coeval_analysis.labels.units import LabelUnits, read_label_csv, write_label_csv

    if (import_csv is None) == (export_csv is None):
        raise click.UsageError("give either --import FILE.csv or --export FILE.csv")
    try:
        units = LabelUnits.read(run)
    except AnalysisInputError as exc:
        _fail([str(exc)])
    if import_csv is not None:
        labels, errors = read_label_csv(import_csv, units, labeler)
        if errors:
            _fail(errors)
        try:
            n = save_labels(run, labels)
        except OSError as exc:
            _fail([f"{run / 'human_labels.jsonl'}: cannot write it ({exc.strerror or exc})"])
        _say(f"coeval label: {n} label(s) from {import_csv} written to {run / 'human_labels.jsonl'}")
        return
    assert export_csv is not None
    from coeval_analysis.labels.suggestions import suggestion_order

    try:
        picks = suggestion_order(run, run_labels(run), count * 4)
    except AnalysisInputError as exc:
        _fail([str(exc)])
    answers = [(c.datapoint_id, c.student) for c in picks if units.factors_of(c.datapoint_id)][:count]
    try:
        rows = write_label_csv(export_csv, units, answers, labeler or "")
    except OSError as exc:
        _fail([f"{export_csv}: cannot write it ({exc.strerror or exc})"])
    _say(f"coeval label: {len(answers)} answer(s), {rows} row(s) to fill in, written to {export_csv}")
