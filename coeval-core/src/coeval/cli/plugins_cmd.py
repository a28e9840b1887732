"""``coeval plugins``: what is installed and what each plugin registered."""

from __future__ import annotations

import json

import click

from coeval.cli.main import CORE_COMMANDS
from coeval.plugins.manager import (
    CORE_PLUGIN,
    commands_by_plugin,
    get_plugin_manager,
    plugin_distributions,
    registries,
)


@click.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def command(as_json: bool) -> None:
    """List installed plugins and the interfaces, phases, metrics... each registered.

    Set COEVAL_DISABLE_PLUGINS=name,... to turn plugins off.
    """
    pm = get_plugin_manager()
    regs = registries()
    dists = plugin_distributions()
    commands = commands_by_plugin()
    if pm.has_plugin(CORE_PLUGIN):
        commands[CORE_PLUGIN] = sorted([*CORE_COMMANDS, *commands.get(CORE_PLUGIN, [])])
    names = sorted({pm.get_name(p) or "" for p in pm.get_plugins()} - {""})
    report: list[dict[str, object]] = []
    for name in names:
        entry: dict[str, object] = {"name": name, "distribution": dists.get(name, "")}
        for kind, registry in regs.all().items():
            items = registry.by_plugin(name)
            if items:
                entry[kind] = items
        if commands.get(name):
            entry["commands"] = commands[name]
        report.append(entry)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    for entry in report:
        click.echo(f"{entry['name']}  ({entry['distribution']})")
        for kind in [*regs.all(), "commands"]:
            if kind in entry:
                click.echo(f"  {kind}: {', '.join(map(str, entry[kind]))}")  # type: ignore[call-overload]
