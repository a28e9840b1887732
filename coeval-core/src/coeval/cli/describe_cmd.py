"""``coeval describe``: a self-contained HTML page describing an experiment."""

from __future__ import annotations

import webbrowser
from pathlib import Path

import click

from coeval.authoring.describe import write_description
from coeval.cli.config_arg import choose_config_path
from coeval.cli.errors import user_errors
from coeval.cli.run_cmd import load_for_cli
from coeval.config.credentials import KeyStore
from coeval.plugins.manager import registries
from coeval.run.probe import probe_models


@click.command("describe")
@click.argument("config_arg", required=False, metavar="[CONFIG]")
@click.option("--config", "config_path", metavar="PATH", help="Experiment YAML file (or give it as CONFIG).")
@click.option(
    "--out", metavar="FILE", help="HTML file to write (default: <config>_description.html beside the config)."
)
@click.option(
    "--probe", is_flag=True, help="Make one tiny call per model and show whether it answers and how fast."
)
@click.option("--open", "open_page", is_flag=True, help="Open the page in a browser afterwards.")
@click.option("--keys", metavar="PATH", help="Provider key file (for --probe and interface: auto).")
@user_errors
def command(
    config_arg: str | None, config_path: str | None, out: str | None, probe: bool, open_page: bool, keys: str | None
) -> None:
    """Write an HTML page of the experiment: models and roles, tasks, attributes, rubrics,
    prompt previews, the phase plan with call counts and cost, batch settings, quotas.

    No model is called unless --probe is given.
    """
    config_path = choose_config_path(config_arg, config_path, "describe")
    config = load_for_cli(config_path, keys=keys, dry_run=True, check_filesystem=False)
    results = None
    if probe:
        results = probe_models(config, KeyStore.load(keys), "full")
    source = Path(config_path)
    target = Path(out) if out else source.with_name(f"{source.stem}_description.html")
    write_description(config, target, registries=registries(), probe=results)
    click.echo(f"wrote {target}")
    if open_page:
        webbrowser.open(target.resolve().as_uri())
