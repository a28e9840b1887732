"""``coeval keys``: set and list provider keys without opening the key file in an editor.

``set`` reads the value from a hidden prompt (or stdin when piped) and never echoes it;
``list`` says where each provider's key comes from, with the value masked.
"""

from __future__ import annotations

import json
import sys

import click

from coeval.cli.errors import UserError, user_errors
from coeval.cli.key_file import (
    UnknownProviderError,
    check_provider,
    default_keys_file,
    key_sources,
    known_providers,
    loose_permissions,
    set_key,
)
from coeval.cli.verbosity import info
from coeval.plugins.manager import registries

__all__ = ["command"]

_KEYS_HELP = "Key file (default: $COEVAL_KEYS_FILE, ./keys.yaml, ~/.coeval/keys.yaml; created if none)."


def _providers() -> list[str]:
    return known_providers(list(registries().interfaces.names()))


def _on_terminal() -> bool:
    return sys.stdin.isatty()


def _read_value(provider: str) -> str:
    """The key from a hidden prompt on a terminal, else the first line of stdin."""
    if _on_terminal():
        value = click.prompt(f"{provider} key", hide_input=True, default="", show_default=False, err=True)
    else:
        value = sys.stdin.readline()
    value = str(value).strip()
    if not value:
        raise UserError("no key given; nothing written", hint=f"echo \"$KEY\" | coeval keys set {provider}")
    return value


@click.group("keys")
def command() -> None:
    """Manage the provider key file (written with mode 600; values are never shown)."""


@command.command("set")
@click.argument("provider")
@click.option("--keys", "keys_path", metavar="PATH", help=_KEYS_HELP)
@click.option("--field", default="api_key", show_default=True,
              help="Entry field to set, for providers with several (e.g. bedrock's region).")
@user_errors
def set_command(provider: str, keys_path: str | None, field: str) -> None:
    """Store PROVIDER's key: typed at a hidden prompt, or piped on stdin.

    \b
    coeval keys set openai                 prompts, without echo
    printenv OPENAI_API_KEY | coeval keys set openai
    """
    try:
        check_provider(provider, _providers())
    except UnknownProviderError as exc:
        raise UserError(str(exc), hint=f"providers: {', '.join(exc.known)}") from None
    path = default_keys_file(keys_path)
    if path.exists() and not path.is_file():
        raise UserError(f"{path}: not a file; nothing written", hint="pass --keys with a file path")
    blocking = next((p for p in path.parents if p.exists()), None)
    if blocking is not None and not blocking.is_dir():
        raise UserError(f"{path}: {blocking} is a file, not a folder; nothing written")
    was_loose = loose_permissions(path)
    value = _read_value(provider)
    try:
        set_key(path, provider, value, field)
    except OSError as exc:
        raise UserError(f"{path}: cannot be written ({exc.strerror or type(exc).__name__}); nothing written") from None
    if was_loose:
        click.secho(f"warning: {path} was readable by other users; it is now mode 600", fg="yellow", err=True)
    info(f"saved the {provider} {'key' if field == 'api_key' else field} to {path} (mode 600)")


@command.command("list")
@click.option("--keys", "keys_path", metavar="PATH",
              help="Key file to read (default: $COEVAL_KEYS_FILE, ./keys.yaml, ~/.coeval/keys.yaml).")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@user_errors
def list_command(keys_path: str | None, as_json: bool) -> None:
    """Every provider with a key, and where it comes from (key file or environment)."""
    path = default_keys_file(keys_path)
    sources = key_sources(path if path.exists() or keys_path else None, _providers())
    if loose_permissions(path):
        click.secho(f"warning: {path} is readable by other users; fix: chmod 600 {path}", fg="yellow", err=True)
    if as_json:
        click.echo(json.dumps({"key_file": str(path) if path.exists() else None,
                               "keys": [s.to_dict() for s in sources]}, indent=2))
        return
    if not sources:
        info(f"no keys found (key file {path} {'holds none' if path.exists() else 'does not exist'}, "
             "no provider environment variable set); add one with `coeval keys set PROVIDER`")
        return
    width = max(len(s.provider) for s in sources)
    shown = max(12, *(len(s.masked) for s in sources))  # "fields: region, ..." is wider than a masked key
    for s in sources:
        click.echo(f"{s.provider:<{width}}  {s.masked:<{shown}}  {s.source}: {s.where}")
