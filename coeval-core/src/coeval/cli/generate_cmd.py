"""``coeval generate``: run phases 1-2 and write a config with static attributes and rubrics."""

from __future__ import annotations

from pathlib import Path

import click

from coeval.authoring.generate import GenerateError, generate_static_config
from coeval.cli.errors import UserError, user_errors
from coeval.cli.verbosity import QUIET, current_verbosity, info
from coeval.config.credentials import KeyStore
from coeval.plugins.manager import registries


@click.command("generate")
@click.option(
    "--config",
    "config_path",
    required=True,
    metavar="PATH",
    help="Experiment YAML with auto / complete / extend.",
)
@click.option("--out", required=True, metavar="PATH", help="Where to write the materialised config.")
@click.option("--keys", metavar="PATH", help="Provider key file.")
@click.option(
    "--work-dir", metavar="DIR", help="Keep the phase 1-2 run folder here (default: a temporary folder)."
)
@click.option("--force", is_flag=True, help="Overwrite --out if it exists.")
@user_errors
def command(config_path: str, out: str, keys: str | None, work_dir: str | None, force: bool) -> None:
    """Let the teachers write attributes and rubrics, then freeze them into a new config.

    Every `auto`, `complete` and `extend` is replaced by what the teachers produced, and
    phases 1-2 are set to Keep, so the new config makes no teacher calls for them.
    """
    if Path(out).exists() and not force:
        raise UserError(f"{out} already exists", "choose another --out, or pass --force to overwrite it")
    if keys:
        KeyStore.load(keys)
    try:
        result = generate_static_config(
            config_path, out, keys_file=keys, work_dir=work_dir, progress=current_verbosity() > QUIET,
            registries=registries(),
        )
    except GenerateError as exc:
        raise UserError(
            str(exc), "see which teacher failed above, fix it (key, quota, model) and retry"
        ) from None
    for change in result.changes:
        info(f"  {change}")
    click.echo(f"wrote {result.path}")
