"""``coeval init``: write a commented starter config, since the wheels ship no examples."""

from __future__ import annotations

from pathlib import Path

import click

from coeval.cli.errors import UserError, user_errors
from coeval.cli.init_templates import TEMPLATE_SUMMARIES, TEMPLATES, render
from coeval.cli.verbosity import info

DEFAULT_FILE = "coeval.yaml"


@click.command("init")
@click.argument("path", required=False, default=DEFAULT_FILE, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--template",
    "-t",
    type=click.Choice(sorted(TEMPLATES)),
    default="mock",
    show_default=True,
    help="Which starter config to write.",
)
@click.option("--force", is_flag=True, help="Overwrite PATH if it exists.")
@click.option("--list", "list_templates", is_flag=True, help="List the templates and exit.")
@user_errors
def command(path: Path, template: str, force: bool, list_templates: bool) -> None:
    """Write a commented starter config to PATH (default coeval.yaml).

    The config validates as written: `coeval run --config PATH --dry-run` passes.
    """
    if list_templates:
        for name in sorted(TEMPLATES):
            click.echo(f"{name:<10} {TEMPLATE_SUMMARIES[name]}")
        return
    if path.exists() and not force:
        raise UserError(f"{path} already exists; nothing written", hint="choose another PATH, or add --force to overwrite it")
    if not path.parent.is_dir():
        raise UserError(f"{path}: folder {path.parent} does not exist; nothing written")
    path.write_text(render(template, str(path)), encoding="utf-8")
    click.echo(f"wrote {path} ({template} template)")
    info(f"next: coeval run --config {path} --dry-run")
