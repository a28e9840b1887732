"""``coeval view`` and ``coeval export``."""

from __future__ import annotations

import sys
import webbrowser
from pathlib import Path

import click
from coeval.cli.errors import ERROR_PREFIX
from coeval.console.text import plain

from coeval_analysis.errors import AnalysisInputError
from coeval_analysis.viewer.export import FORMATS, export_judgments, export_leaderboard
from coeval_analysis.viewer.server import ViewServer
from coeval_analysis.viewer.store import RunStore, StoreError, cache_folder

__all__ = ["export_command", "view_command"]


def _is_run(path: Path) -> bool:
    return any((path / d).is_dir() for d in ("phase3_datapoints", "phase4_responses", "phase5_evaluations"))


def _check_run(path: Path, option: str) -> Path:
    if not _is_run(path):
        raise click.UsageError(f"{option} {path}: not a run folder (no phase3_datapoints, phase4_responses "
                               "or phase5_evaluations folder inside)")
    return path


def _runs(runs: tuple[Path, ...], storage: Path | None) -> list[Path]:
    found = [_check_run(r, "--run") for r in runs]
    if storage is not None:
        inside = sorted(p for p in storage.iterdir() if p.is_dir() and _is_run(p))
        if not inside:
            raise click.UsageError(f"--storage-folder {storage}: holds no run folder")
        found.extend(inside)
    if not found:
        raise click.UsageError("give --run DIR (once or twice) or --storage-folder F")
    return found


def _store(run: Path, command: str, *, background: bool = False) -> RunStore:
    """The run's store; a cache folder that cannot be made or written, or a run file the
    guard refuses (a FIFO, an outside link), is exit code 2."""
    try:
        return RunStore(run, background=background)
    except AnalysisInputError as exc:
        click.echo(plain(f"{ERROR_PREFIX} {exc}"), err=True)
        sys.exit(2)
    except OSError as exc:
        where = exc.filename or cache_folder()
        click.echo(f"coeval {command}: cannot use the cache folder {where}: {exc.strerror or exc} "
                   "(set COEVAL_VIEW_CACHE to a writable folder)", err=True)
        sys.exit(2)


@click.command("view", short_help="Browse a run in a local web app: ranking, datapoints, judges' replies, failures.")
@click.option("--run", "runs", multiple=True, type=click.Path(path_type=Path, file_okay=False, exists=True),
              help="Run folder; twice to compare two runs.")
@click.option("--storage-folder", type=click.Path(path_type=Path, file_okay=False, exists=True),
              help="Folder of runs: list and compare every run inside.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to serve on (localhost only by default; any other needs the token printed at start).")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port (0: any free one).")
@click.option("--no-browser", is_flag=True, help="Do not open a browser.")
@click.option("--label", "labeler", metavar="NAME", default=None,
              help="Label answers as NAME: adds the Label page (/r/0/label), which writes RUN/human_labels.jsonl.")
def view_command(runs: tuple[Path, ...], storage_folder: Path | None, host: str, port: int, no_browser: bool,
                 labeler: str | None) -> None:
    """Serve a run (or several) on http://127.0.0.1:PORT/ until Ctrl-C.

    Records are read by DuckDB into a cached database (see docs/analysis.md). The server
    answers at once: on a first look at a big run, the ranking and datapoint table come
    within a second or two and the other pages once every record is read ("indexing n%").

    Example: coeval view --run eval_runs/demo-v1
    """
    stores = [_store(p, "view", background=True) for p in _runs(runs, storage_folder)]
    try:
        server = ViewServer((host, port), stores, labeler=labeler)
    except OSError as exc:
        for store in stores:
            store.close()
        click.echo(f"coeval view: cannot serve on {host}:{port}: {exc.strerror or exc}", err=True)
        sys.exit(2)
    if server.guard.token is not None:
        click.echo(f"coeval view: warning: serving on {host}, not on loopback: every machine that can reach this "
                   "one can ask for the run's pages; each needs the token in the URL below (then a cookie)", err=True)
    click.echo(f"coeval view: serving {len(stores)} run(s) on {server.sign_in_url} (Ctrl-C stops)", err=True)
    if labeler:
        click.echo(f"coeval view: labelling as {labeler} on {server.url}r/0/label", err=True)
    if not no_browser:
        webbrowser.open(server.sign_in_url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        for store in stores:
            store.close()


@click.command("export", short_help="Write every judgment of a run as one table (parquet, csv or jsonl).")
@click.option("--run", "run", required=True, type=click.Path(path_type=Path, file_okay=False, exists=True),
              help="Run folder.")
@click.option("--format", "fmt", required=True, type=click.Choice(FORMATS), help="Output format.")
@click.option("--out", required=True, type=click.Path(path_type=Path, dir_okay=False), help="Output file.")
def export_command(run: Path, fmt: str, out: Path) -> None:
    """One row per judgment: datapoint, student, sample, judge, factor, level, score, a
    code test's status and error, rationale, raw reply, latency and cost; beside it, with a
    current ``coeval analyze``, the leaderboard (OUT.leaderboard.EXT).

    Example: coeval export --run eval_runs/demo-v1 --format parquet --out j.parquet
    """
    try:
        n = export_judgments(_store(_check_run(run, "--run"), "export"), fmt, out)
    except StoreError as exc:
        click.echo(f"coeval export: {exc}", err=True)
        sys.exit(2)
    click.echo(f"coeval export: {n} rows written to {out}", err=True)
    board = export_leaderboard(run, fmt, out)
    if board is not None:
        click.echo(f"coeval export: the leaderboard written to {board}", err=True)
