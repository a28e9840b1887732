"""``coeval run``: validate a config, print its plan, and run the five phases."""

from __future__ import annotations

import os
from typing import Any

import click

from coeval.cli.adaptive_flag import print_adaptive_end, with_adaptive
from coeval.cli.config_arg import choose_config_path
from coeval.cli.continue_plan import with_continue_modes
from coeval.cli.drift_check import check_drift
from coeval.cli.empty_teachers import warn_empty_benchmark_teachers
from coeval.cli.errors import UserError, echo_issues, user_errors
from coeval.cli.lanes_preview import format_lanes
from coeval.cli.request_preview import format_request_bodies
from coeval.cli.run_end import run_end_actions
from coeval.cli.run_summary import run_summary_json
from coeval.cli.spend_check import DEFAULT_CONFIRM_ABOVE_USD, check_spend
from coeval.cli.verbosity import verbosity, verbosity_options
from coeval.config.credentials import KeyStore
from coeval.config.errors import ConfigError
from coeval.planning import format_plan, plan_experiment
from coeval.plugins.config_loading import load_config
from coeval.run.limits import limit_datapoints, limit_note, record_limit
from coeval.run.options import RunOptions
from coeval.run.selection import select, unknown_names

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
#: Set (to 1) by ``--allow-unsandboxed-code``; the code-tests evaluator of coeval-benchmarks reads it.
ALLOW_UNSANDBOXED_ENV = "COEVAL_ALLOW_UNSANDBOXED_CODE"


def parse_model_list(value: str | None) -> tuple[str, ...]:
    """``"a,b, c"`` -> ``("a", "b", "c")``."""
    if not value:
        return ()
    return tuple(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))


def check_only_models(config: Any, names: tuple[str, ...]) -> None:
    """V-36: ``--only-models`` must name models of the config."""
    issues = unknown_names("--only-models", names, [m.name for m in config.models], "models[].name", config)
    if issues:
        raise ConfigError(issues, source=config.source)


def load_for_cli(
    config_path: str,
    *,
    keys: str | None,
    continue_run: bool = False,
    resume: str | None = None,
    only_models: tuple[str, ...] = (),
    dry_run: bool = False,
    check_filesystem: bool = True,
) -> Any:
    """Load and validate a config the way every config-taking command does.

    An explicitly given key file is read first so a malformed one fails cleanly even when
    no model needs it yet. Warnings go to stderr.
    """
    if keys:
        KeyStore.load(keys)
    config = load_config(
        config_path,
        continue_run=continue_run,
        check_filesystem=check_filesystem,
        keys_file=keys,
        resume_from=resume,
        allow_existing_run=bool(only_models),
        environment_as_warnings=dry_run,
    )
    check_only_models(config, only_models)
    if config.warnings:
        echo_issues(config.warnings)
    return config


@click.command("run")
@click.argument("config_arg", required=False, metavar="[CONFIG]")
@click.option("--config", "config_path", metavar="PATH", help="Experiment YAML file (or give it as CONFIG).")
@click.option("--dry-run", is_flag=True, help="Validate and print the plan; make no call and write no file.")
@click.option("--json", "as_json", is_flag=True, help="End with a machine-readable summary on stdout.")
@click.option(
    "--allow-drift",
    is_flag=True,
    help="With --continue: proceed although a model's or task's settings changed (recorded in meta.json).",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    metavar="N",
    help="At most N datapoints per (task, teacher), and their answers and judgments; "
    "a later --continue with a larger N extends the run.",
)
@click.option("--tasks", "task_names", metavar="A,B", help="Run only these tasks (the rest: a later run).")
@click.option(
    "--models",
    "model_names",
    metavar="M,N",
    help="Run only with these models, in their roles (the rest: a later run).",
)
@click.option(
    "--continue",
    "continue_run",
    is_flag=True,
    help="Resume the run in place: completed phases are skipped, missing items filled.",
)
@click.option(
    "--only-models",
    metavar="A,B",
    help="Only these models make calls (teachers in phases 1-3, "
    "students in 4, judges in 5); several processes can share one run this way.",
)
@click.option(
    "--keys",
    metavar="PATH",
    help="Provider key file (default: $COEVAL_KEYS_FILE, ./keys.yaml, ~/.coeval/keys.yaml).",
)
@click.option(
    "--resume",
    "resume",
    metavar="ID",
    help="Start this run from an earlier one (id under storage_folder, or a path): its artifacts are "
    "reused as the phase modes say (overrides experiment.resume_from).",
)
@click.option(
    "--probe",
    "probe_mode",
    type=click.Choice(["full", "resume", "disable"]),
    help="Check that models answer before the run (default: experiment.probe_mode).",
)
@click.option("--probe-on-fail", type=click.Choice(["abort", "warn"]), help="What a failed probe does.")
@click.option("--skip-probe", is_flag=True, help="Same as --probe disable.")
@click.option("--estimate-only", is_flag=True, help="Print the call and cost estimate, then exit.")
@click.option(
    "--estimate-samples",
    type=click.IntRange(min=0),
    metavar="N",
    help="Live sample calls per model for the estimate (0 = heuristics only).",
)
@click.option(
    "--log-level", type=click.Choice(LOG_LEVELS, case_sensitive=False), help="Override experiment.log_level."
)
@click.option(
    "--confirm-above",
    type=click.FloatRange(min=0),
    default=DEFAULT_CONFIRM_ABOVE_USD,
    show_default=True,
    metavar="USD",
    help="Ask before running when the cost estimate is above this; off a terminal, refuse (exit code 4) "
         "unless --yes is given.",
)
@click.option("--yes", "-y", "assume_yes", is_flag=True,
              help="Spend without asking, whatever the cost estimate (needed off a terminal above --confirm-above).")
@click.option("--pipeline/--no-pipeline", default=True, show_default=True,
              help="Run phases 3-5 at once: a datapoint is answered, and an answer judged, as soon as it "
                   "exists (New/Extend modes, no batch; docs/running.md).")
@click.option("--adaptive", is_flag=True,
              help="Phase 5 in rounds: judges that tell answers apart too little are stopped after a calibration "
                   "slice, and the rounds stop once the ranking's question is answered (experiment.adaptive's "
                   "defaults unless the config sets it; docs/running.md).")
@click.option("--allow-unsandboxed-code", is_flag=True, envvar=ALLOW_UNSANDBOXED_ENV,
              help="Run students' code for python_tests even where bubblewrap (bwrap) is missing, without a sandbox "
                   "(docs/benchmarks.md, 'The code sandbox').")
@verbosity_options
@click.pass_context
@user_errors
def command(
    ctx: click.Context,
    config_arg: str | None,
    config_path: str | None,
    dry_run: bool,
    as_json: bool,
    allow_drift: bool,
    limit: int | None,
    task_names: str | None,
    model_names: str | None,
    continue_run: bool,
    only_models: str | None,
    keys: str | None,
    resume: str | None,
    probe_mode: str | None,
    probe_on_fail: str | None,
    skip_probe: bool,
    estimate_only: bool,
    estimate_samples: int | None,
    log_level: str | None,
    confirm_above: float,
    assume_yes: bool,
    pipeline: bool,
    adaptive: bool,
    allow_unsandboxed_code: bool,
    quiet: bool,
    verbose: bool,
) -> None:
    """Run an experiment: phases 1-5, checkpointed item by item.

    \b
    coeval run my.yaml --dry-run      validate, print the plan, no calls
    coeval run my.yaml                run (--config my.yaml works too)
    coeval run my.yaml --continue     resume an interrupted run
    """
    config_path = choose_config_path(config_arg, config_path, "run")
    if allow_unsandboxed_code:
        os.environ[ALLOW_UNSANDBOXED_ENV] = "1"  # read by the python_tests evaluator in phase 5
    level = verbosity(quiet, verbose)
    models = parse_model_list(only_models)
    if skip_probe:
        probe_mode = "disable"
    config = load_for_cli(
        config_path, keys=keys, continue_run=continue_run, resume=resume, only_models=models, dry_run=dry_run
    )
    if adaptive or config.experiment.adaptive is not None:
        config, pipeline = with_adaptive(config, only_models=models), False  # phase 5 in rounds over every answer
    whole = config
    if limit is not None:
        config = limit_datapoints(config, limit)
    if task_names or model_names:
        config = select(config, tasks=parse_model_list(task_names), models=parse_model_list(model_names))
    if continue_run:
        check_drift(config, allow_drift=allow_drift, dry_run=dry_run, whole=whole)
    if dry_run:
        plan = plan_experiment(config, only_models=models)
        if continue_run:
            plan = with_continue_modes(plan, config)
        click.echo(format_plan(plan), nl=False)
        click.echo(format_lanes(config), nl=False)
        click.echo(format_request_bodies(config), nl=False)
        click.echo("Dry run: config is valid; no call made, no file written.")
        return
    options = RunOptions(
        continue_run=continue_run,
        only_models=models,
        keys_file=keys,
        resume_from=resume,
        probe_mode=probe_mode,
        probe_on_fail=probe_on_fail,
        log_level=log_level.upper() if log_level else None,
        estimate_only=estimate_only,
        estimate_samples=estimate_samples,
        pipeline=pipeline,
        progress=True,
        verbosity=level,
    )
    try:
        from coeval.run.runner import run_experiment  # lazy: --dry-run never imports the runner
    except ImportError as exc:
        if exc.name and exc.name.startswith("coeval.run.runner"):
            raise UserError(
                "this installation has no pipeline runner (coeval.run.runner)", "reinstall coeval-core"
            ) from None
        raise
    if not estimate_only:
        check_spend(
            config,
            confirm_above=confirm_above,
            yes=assume_yes,
            continue_run=continue_run,
            only_models=models,
            keys_file=keys,
            quiet=quiet,
            pipeline=pipeline,
        )
    result = run_experiment(config, options)
    run_end_actions(result)
    if not quiet and result.status not in ("estimated", "error"):
        print_adaptive_end(getattr(result, "run_folder", None))
    empty_teachers = warn_empty_benchmark_teachers(config, quiet=quiet)  # their warning names the next step: ingest
    if result.status not in ("estimated", "error"):
        note = limit_note(record_limit(result.run_folder, whole, limit, result.status))
        if note and not quiet:
            click.echo(f"note: {note}; `coeval run {config_path} --continue` does the rest", err=True)
    if result.status != "estimated" and result.exit_code in (0, 1, 3) and not quiet and not empty_teachers:
        click.echo(f"next: coeval analyze --run {result.run_folder}", err=True)
    if as_json:
        click.echo(run_summary_json(result))
    ctx.exit(int(getattr(result, "exit_code", 0)))
