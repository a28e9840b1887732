"""``coeval schema``: the JSON Schema of the config file, for editors and CI checks."""

from __future__ import annotations

import json

import click

from coeval.config._schema_check import config_schema


@click.command("schema")
@click.option("--compact", is_flag=True, help="Print on one line.")
def command(compact: bool) -> None:
    """Print the JSON Schema of the experiment config file.

    Point your editor's YAML language server at it, e.g. add to the top of a config:

        # yaml-language-server: $schema=coeval-schema.json

    after `coeval schema > coeval-schema.json`.
    """
    click.echo(json.dumps(config_schema(), indent=None if compact else 2))
