"""``coeval wizard``: write an experiment config by answering questions, or from an objective."""

from __future__ import annotations

from pathlib import Path

import click

from coeval.authoring.wizard import WizardError, build_interactively, draft_config, write_config
from coeval.cli.errors import UserError, user_errors
from coeval.config.credentials import KeyStore
from coeval.config.phase_modes import registered_modes
from coeval.config.phase_order import ordered_phases
from coeval.plugins.config_loading import load_config
from coeval.plugins.manager import registries
from coeval.run.probe import probe_models


@click.command("wizard")
@click.option(
    "--out", default="experiment.yaml", show_default=True, metavar="PATH", help="Where to write the config."
)
@click.option(
    "--objective", metavar="TEXT", help="Non-interactive: let a model draft tasks for this objective."
)
@click.option(
    "--models",
    "model_specs",
    metavar="LIST",
    help="With --objective: INTERFACE:MODEL_ID entries, comma separated (e.g. openai:gpt-4o-mini).",
)
@click.option(
    "--drafter",
    metavar="INTERFACE:MODEL_ID",
    help="With --objective: the model that drafts (default: the first of --models).",
)
@click.option(
    "--items",
    default=12,
    show_default=True,
    type=click.IntRange(min=1),
    help="With --objective: datapoints per task and teacher.",
)
@click.option(
    "--experiment-id", default="drafted-v1", show_default=True, help="With --objective: experiment.id."
)
@click.option(
    "--storage-folder",
    default="./eval_runs",
    show_default=True,
    help="With --objective: experiment.storage_folder.",
)
@click.option("--keys", metavar="PATH", help="Provider key file (drafting and probing).")
@click.option(
    "--probe/--no-probe",
    default=None,
    help="Probe the models after writing (default: ask; no when not interactive).",
)
@click.option("--force", is_flag=True, help="Overwrite --out if it exists.")
@user_errors
def command(
    out: str,
    objective: str | None,
    model_specs: str | None,
    drafter: str | None,
    items: int,
    experiment_id: str,
    storage_folder: str,
    keys: str | None,
    probe: bool | None,
    force: bool,
) -> None:
    """Build a validated experiment config.

    \b
    coeval wizard --out my.yaml                          answer questions
    coeval wizard --objective "rank models on SQL" \\
        --models openai:gpt-4o-mini,anthropic:claude-3-5-haiku-20241022
    """
    if Path(out).exists() and not force:
        raise UserError(f"{out} already exists", "choose another --out, or pass --force to overwrite it")
    try:
        if objective:
            specs = [s for s in (model_specs or "").split(",") if s.strip()]
            raw = draft_config(
                objective,
                specs,
                drafter=drafter,
                items=items,
                experiment_id=experiment_id,
                storage_folder=storage_folder,
                keys_file=keys,
            )
            source = "drafted from an objective"
        else:
            raw = build_interactively(_registered_phase_modes())
            source = "interactive"
        path = write_config(raw, out, source=source, keys_file=keys)
    except WizardError as exc:
        raise UserError(str(exc)) from None
    click.echo(f"wrote {path}: {len(raw['models'])} models, {len(raw['tasks'])} tasks")
    if probe is None:
        probe = not objective and click.confirm("Probe the models now (one tiny call each)?", default=False)
    if probe:
        _probe(path, keys)
    click.echo(f"next: coeval run --config {path} --dry-run")


def _probe(path: Path, keys: str | None) -> None:
    config = load_config(path, check_filesystem=False, keys_file=keys, environment_as_warnings=True)
    for r in probe_models(config, KeyStore.load(keys), "full"):
        if r.skipped:
            click.echo(f"  {r.model}: skipped")
        elif r.ok:
            click.echo(f"  {r.model}: ok ({r.latency_s or 0:.2f} s)")
        else:
            click.secho(f"  {r.model}: failed: {r.error}", fg="red")


def _registered_phase_modes() -> dict[str, tuple[str, ...]]:
    """Phase id -> modes of every registered phase, in run order."""
    return registered_modes(ordered_phases(registries()))
