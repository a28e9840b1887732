"""Spend awareness for ``coeval run``: the estimate before the first paid call, and a
question on a terminal when it is above ``--confirm-above``. Off a terminal (CI, pipes,
cron) nobody can answer, so a run above the threshold is refused unless ``--yes`` says
the spend is intended: the guard matters most where nobody watches.

The estimate uses heuristics only (no sample calls), so nothing is spent before the user
has seen it.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from coeval.cli.errors import UserError
from coeval.planning.cost import CostEstimate, estimate_cost, format_duration
from coeval.storage.call_ledger import LedgerError, ledger_path, read_ledger
from coeval.storage.meta_check import BadRunFile, check_meta
from coeval.storage.run_folder import RunFolder

__all__ = ["DEFAULT_CONFIRM_ABOVE_USD", "EXIT_DECLINED", "EXIT_NEEDS_YES", "check_spend", "estimate_line",
           "stdin_is_terminal"]

#: ``--confirm-above`` default, in dollars.
DEFAULT_CONFIRM_ABOVE_USD = 5.0
#: Exit code when the user answers "no": nothing was run.
EXIT_DECLINED = 1
#: Exit code when the estimate is above ``--confirm-above`` off a terminal and ``--yes`` was
#: not given: nothing was run.
EXIT_NEEDS_YES = 4


def stdin_is_terminal() -> bool:
    """Whether a person can answer a question (a separate function so tests can stand in)."""
    return sys.stdin.isatty()


def _check_run_files(config: Any) -> None:
    """Before the estimate reads the run folder: a ``meta.json`` field or a call-ledger line
    of the wrong shape is one error naming the file and the field (exit 2)."""
    run = RunFolder.for_experiment(config.experiment.storage_folder, config.experiment.id)
    try:
        meta = run.read_meta()
    except (OSError, ValueError):
        return  # unreadable: the run itself reports it, with the file and the fix
    try:
        check_meta(meta, run.meta_path)
        read_ledger(ledger_path(run.root))
    except (BadRunFile, LedgerError) as exc:
        raise UserError(str(exc)) from None
    except OSError:
        return


def estimate_line(estimate: CostEstimate) -> str:
    """One sentence: calls, tokens, dollars and time."""
    total = estimate.total
    cost = f"${estimate.total_cost_usd:,.2f}" + ("" if total["cost_complete"] else " (some prices unknown)")
    what = "remaining work" if estimate.remaining_only else "this run"
    return (
        f"estimate for {what}: {total['calls']:,} calls, {total['input_tokens']:,} input + "
        f"{total['output_tokens']:,} output tokens, {cost}, time {format_duration(estimate.seconds)} "
        "(heuristics; `coeval plan` has the details)"
    )


def check_spend(
    config: Any,
    *,
    confirm_above: float,
    yes: bool,
    continue_run: bool,
    only_models: tuple[str, ...],
    keys_file: str | None,
    quiet: bool = False,
    pipeline: bool = True,
) -> None:
    """Print the estimate (``quiet``: only when above ``confirm_above``); above it, ask on a
    terminal, refuse off one (``yes`` skips both).

    Answering no exits with :data:`EXIT_DECLINED`, a refusal off a terminal with
    :data:`EXIT_NEEDS_YES`, before any call or file is made.
    """
    if continue_run:
        _check_run_files(config)
    try:
        estimate = estimate_cost(
            config, samples=0, continue_run=continue_run, keys_file=keys_file, only_models=only_models,
            pipeline=pipeline,
        )
    except (OSError, ValueError):
        return  # an unreadable run folder: the run itself reports it, with the file and the fix
    cost = estimate.total_cost_usd
    if not quiet or cost > confirm_above:
        click.echo(estimate_line(estimate), err=True)
    if cost <= confirm_above or yes:
        return
    if not stdin_is_terminal():
        click.echo(
            f"error: the estimate (${cost:,.2f}) is above --confirm-above ${confirm_above:,.2f} and there is no "
            "terminal to ask; pass --yes to spend it (nothing was run)",
            err=True,
        )
        raise SystemExit(EXIT_NEEDS_YES)
    if not click.confirm(f"Spend about ${cost:,.2f}? (above --confirm-above ${confirm_above:,.2f})", err=True):
        click.echo("nothing was run (no call made, no file written)", err=True)
        raise SystemExit(EXIT_DECLINED)
