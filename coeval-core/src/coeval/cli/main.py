"""The ``coeval`` command line. Subcommands live in sibling modules; plugins add more
through the ``register_commands`` hook."""

from __future__ import annotations

import sys

import click

from coeval.cli.plugins_cmd import plugins_command


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="coeval-core", prog_name="coeval")
def cli() -> None:
    """CoEval: benchmark language models with language models.

    Teachers write an evaluation set from a task description, students answer it, and an
    ensemble of judges scores every answer. One YAML file describes an experiment.
    """


cli.add_command(plugins_command)


def _add_plugin_commands() -> None:
    from coeval.plugins import get_plugin_manager

    get_plugin_manager().hook.register_commands(cli=cli)


def main(argv: list[str] | None = None) -> None:
    _add_plugin_commands()
    cli.main(args=argv, prog_name="coeval", standalone_mode=True)


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
