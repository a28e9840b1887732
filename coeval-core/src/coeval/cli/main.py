"""The ``coeval`` command line.

Core subcommands live in sibling modules ``coeval.cli.<name>_cmd`` exposing ``command``;
they are imported only when invoked, so ``coeval --help`` stays fast. Plugins add more
through the ``register_commands`` hook.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

import click

from coeval.cli.errors import report_user_error, show_click_error
from coeval.cli.verbosity import with_verbosity
from coeval.contract.errors import DuplicateRegistrationError

#: subcommand -> (module, one-line help shown by `coeval --help` without importing it)
CORE_COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("coeval.cli.run_cmd", "Run an experiment (or --dry-run to validate and print the plan)."),
    "status": ("coeval.cli.status_cmd", "Show a run's progress, failures, spend and pending batches."),
    "repair": ("coeval.cli.repair_cmd", "Fix truncated lines, duplicates and failed records of a run."),
    "probe": ("coeval.cli.probe_cmd", "Check that every model in a config answers."),
    "models": ("coeval.cli.models_cmd", "List the models each configured provider offers."),
    "plan": ("coeval.cli.plan_cmd", "Estimate calls, tokens, cost and time before running."),
    "generate": ("coeval.cli.generate_cmd", "Run phases 1-2 and write a config with static attributes and rubric."),
    "describe": ("coeval.cli.describe_cmd", "Write a self-contained HTML page describing an experiment."),
    "wizard": ("coeval.cli.wizard_cmd", "Build an experiment config interactively."),
    "schema": ("coeval.cli.schema_cmd", "Print the JSON Schema of the config file (for editors)."),
    "plugins": ("coeval.cli.plugins_cmd", "List installed plugins and what each registered."),
    "init": ("coeval.cli.init_cmd", "Write a commented starter config (mock, openai, local, benchmark)."),
    "keys": ("coeval.cli.keys_cmd", "Set and list provider keys in the key file (values never shown)."),
}


def _available(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


class CoevalGroup(click.Group):
    """Loads core subcommands lazily and plugin subcommands once."""

    _plugins_loaded = False

    def _load_plugin_commands(self) -> None:
        if CoevalGroup._plugins_loaded:
            return
        CoevalGroup._plugins_loaded = True
        from coeval.plugins.manager import get_plugin_manager  # heavy: keeps this module light

        get_plugin_manager().hook.register_commands(cli=self)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load_plugin_commands()
        core = [name for name, (mod, _) in CORE_COMMANDS.items() if _available(mod)]
        return sorted(set(core) | set(self.commands))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        """The command, with ``-q/--quiet`` and ``-v/--verbose`` whoever wrote it."""
        if name in CORE_COMMANDS and name not in self.commands:
            module, _ = CORE_COMMANDS[name]
            if _available(module):
                command: click.Command = importlib.import_module(module).command
                return with_verbosity(command)
        self._load_plugin_commands()
        found = self.commands.get(name)
        return with_verbosity(found) if found is not None else None

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """A shipped plugin's command that is missing says why and how to get it."""
        from coeval.contract.status import PLUGIN_COMMANDS, unavailable_reason  # heavy: the plugin stack

        name = click.utils.make_str(args[0]) if args else ""
        if name in PLUGIN_COMMANDS and self.get_command(ctx, name) is None and not ctx.resilient_parsing:
            dist = PLUGIN_COMMANDS[name]
            raise click.UsageError(f"command '{name}' needs {dist}, {unavailable_reason(dist)}", ctx)
        return super().resolve_command(ctx, args)

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: object
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.ClickException as exc:
            setattr(exc, "show", show_click_error(exc))  # noqa: B010 - replaces click's "Error:" prefix
            raise

    def invoke(self, ctx: click.Context) -> object:
        """Click's own errors (bad option, missing argument) use the one ``error:`` prefix."""
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            setattr(exc, "show", show_click_error(exc))  # noqa: B010 - replaces click's "Error:" prefix
            raise

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in CORE_COMMANDS:
                rows.append((name, CORE_COMMANDS[name][1]))
            else:
                cmd = self.commands[name]
                rows.append((name, cmd.get_short_help_str(limit=300)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=CoevalGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="coeval-core", prog_name="coeval")
def cli() -> None:
    """CoEval: benchmark language models with language models.

    Teachers write an evaluation set from a task description, students answer it, and an
    ensemble of judges scores every answer. One YAML file describes an experiment.

    Start with `coeval init` (a starter config on the offline mock models), then
    `coeval run coeval.yaml`.
    """


def main(argv: list[str] | None = None) -> None:
    """The ``coeval`` entry point; a plugin conflict (two plugins registering one name) is a
    one-line error with exit code 2, whichever command met it."""
    try:
        cli.main(args=argv, prog_name="coeval")
    except DuplicateRegistrationError as exc:
        sys.exit(report_user_error(exc))


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
