"""``coeval plan``: calls, tokens, cost and time of an experiment before it runs."""

from __future__ import annotations

import json
from pathlib import Path

import click

from coeval.cli.adaptive_flag import with_adaptive
from coeval.cli.config_arg import choose_config_path
from coeval.cli.errors import user_errors
from coeval.cli.lanes_preview import format_lanes
from coeval.cli.run_cmd import load_for_cli, parse_model_list
from coeval.console import output_console
from coeval.planning import print_plan
from coeval.planning.adaptive_range import adaptive_range
from coeval.planning.cost import estimate_cost, print_estimate, write_estimate


@click.command("plan")
@click.argument("config_arg", required=False, metavar="[CONFIG]")
@click.option("--config", "config_path", metavar="PATH", help="Experiment YAML file (or give it as CONFIG).")
@click.option(
    "--estimate-samples",
    type=click.IntRange(min=0),
    metavar="N",
    help="Live sample calls per model and phase (default: experiment.estimate_samples; 0 = no call).",
)
@click.option(
    "--continue",
    "continue_run",
    is_flag=True,
    help="Estimate only the work the run folder does not hold yet.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the estimate as JSON instead of tables.")
@click.option(
    "--out",
    metavar="FILE",
    help="Also write the JSON estimate to PATH (nothing is written without it).",
)
@click.option("--only-models", metavar="A,B", help="Estimate only what these models do.")
@click.option("--keys", metavar="PATH", help="Provider key file (for sample calls and interface: auto).")
@click.option("--pipeline/--no-pipeline", default=True, show_default=True,
              help="Time phases 3-5 run at once, as `coeval run` does unless given --no-pipeline.")
@click.option("--adaptive", is_flag=True,
              help="Also show the range of phase-5 calls and dollars of an adaptive run (on by itself when the "
                   "config sets experiment.adaptive).")
@user_errors
def command(
    config_arg: str | None,
    config_path: str | None,
    estimate_samples: int | None,
    continue_run: bool,
    as_json: bool,
    out: str | None,
    only_models: str | None,
    keys: str | None,
    pipeline: bool,
    adaptive: bool,
) -> None:
    """Estimate calls, tokens, cost and time per phase and model.

    \b
    coeval plan --config my.yaml --estimate-samples 0   heuristics only, no call
    coeval plan --config my.yaml                        2 sample calls per model and phase
    coeval plan --config my.yaml --continue             what is left of a run
    coeval plan --config my.yaml --json                 machine-readable
    """
    config_path = choose_config_path(config_arg, config_path, "plan")
    models = parse_model_list(only_models)
    # a plan needs no run folder, except to count what is left of one (--continue)
    config = load_for_cli(
        config_path,
        keys=keys,
        continue_run=continue_run,
        only_models=models,
        dry_run=not continue_run,
        check_filesystem=continue_run,
    )
    estimate = estimate_cost(
        config, samples=estimate_samples, continue_run=continue_run, keys_file=keys, only_models=models,
        pipeline=pipeline,
    )
    target = Path(out) if out else None  # a plan only looks: it writes where --out says, nowhere else
    if adaptive:
        config = with_adaptive(config)
    design = config.experiment.adaptive
    spread = adaptive_range(config, estimate.cells, design.as_dict()) if design is not None else None
    if as_json:
        click.echo(json.dumps({**estimate.to_dict(), **({"adaptive": spread.to_dict()} if spread else {})}, indent=2))
    else:
        console = output_console()
        if not continue_run:
            print_plan(estimate.plan, console)
        console.print(format_lanes(config), end="", markup=False, highlight=False)
        print_estimate(estimate, console)
        for line in spread.lines() if spread is not None else []:
            console.print(line, markup=False, highlight=False, soft_wrap=True)
    if target is not None:
        write_estimate(estimate, target)
        click.echo(f"estimate written to {target}", err=as_json)
