"""``coeval models``: list the models each configured provider offers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from typing import Any

import click

from coeval.cli.errors import UserError, user_errors
from coeval.cli.verbosity import command_logging, verbosity, verbosity_options
from coeval.config.credentials import KeyFileError, KeyStore, redact
from coeval.config.model import ModelConfig
from coeval.contract.status import missing_interface
from coeval.plugins.manager import registries
from coeval.shipped_interfaces import IN_PROCESS_INTERFACES, SERVER_ADDRESS_ENV

#: Providers that need no key, only a reachable server (listed when their URL is configured).
_KEYLESS = SERVER_ADDRESS_ENV
_VIRTUAL = IN_PROCESS_INTERFACES


def _configured(name: str, keys: Any) -> bool:
    if name in _KEYLESS:
        return bool(os.environ.get(_KEYLESS[name])) or name in keys.entries
    return bool(keys.for_provider(name).present)


async def _list_one(name: str, keys: Any, registries: Any, verbose: bool) -> tuple[str, list[dict[str, Any]] | None, str | None]:
    model = ModelConfig(name=name, interface=name, parameters={"model": ""})
    iface = None
    try:
        iface = registries.interfaces.get(name)(model, keys.for_provider(name))
        if verbose and hasattr(iface, "model_details"):
            details = await iface.model_details()
        else:
            details = [{"id": m} for m in await iface.list_models()]
        return name, details, None
    except Exception as exc:
        if iface is not None:
            exc = iface.classify_error(exc)
        return name, None, redact(str(exc))[:300]
    finally:
        if iface is not None:
            with contextlib.suppress(Exception):  # closing must not mask the result
                await iface.aclose()


def _chosen_providers(providers: str | None, regs: Any, keystore: Any) -> list[str]:
    """The providers to list: those named, or every one with credentials; UserError otherwise."""
    real = [n for n in regs.interfaces.names() if n not in _VIRTUAL]
    if providers:
        names = [p.strip() for p in providers.split(",") if p.strip()]
        unknown = [n for n in names if n not in regs.interfaces]
        if unknown:
            reasons = "; ".join(missing_interface(n) for n in unknown)
            raise UserError(f"--providers: {reasons}", hint=f"available here: {', '.join(real) or 'none'}")
        return names
    names = [n for n in real if _configured(n, keystore)]
    if not names:
        raise UserError("no provider has credentials", hint="add keys to keys.yaml or set e.g. OPENAI_API_KEY, or name "
                        "providers with --providers")
    return names


@click.command("models")
@click.option("--providers", metavar="A,B", help="Only these interfaces (default: every provider you have credentials for).")
@click.option("--keys", metavar="PATH", help="Provider key file (default: $COEVAL_KEYS_FILE, ./keys.yaml, ~/.coeval/keys.yaml).")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@verbosity_options
@user_errors
def command(providers: str | None, keys: str | None, as_json: bool, quiet: bool, verbose: bool) -> None:
    """List the model ids each provider offers, to find the right `parameters.model`.

    Asks each provider's model-list endpoint, using the credentials of the key file and the
    environment. Exit code 2 for bad input (no provider with credentials, an unknown
    provider, a bad key file; with --json also printed as {"error": ..., "fix": ...}),
    1 when no provider could be listed. -v adds the details a provider reports (context
    window, owner, display name); -q prints the ids alone.
    """
    with command_logging(verbosity(quiet, verbose)):
        _list_models(providers, keys, as_json, quiet=quiet, verbose=verbose)


def _list_models(providers: str | None, keys: str | None, as_json: bool, *, quiet: bool, verbose: bool) -> None:
    """The body of ``coeval models``, run inside the chosen console log level."""
    regs = registries()
    try:
        keystore = KeyStore.load(keys)
        names = _chosen_providers(providers, regs, keystore)
    except (UserError, KeyFileError) as exc:
        if as_json:  # a script reading stdout gets the error as JSON too; stderr and exit 2 as always
            click.echo(json.dumps({"error": redact(str(exc)), "fix": getattr(exc, "hint", None)}, indent=2))
        raise

    async def gather() -> list[tuple[str, list[dict[str, Any]] | None, str | None]]:
        return list(await asyncio.gather(*(_list_one(n, keystore, regs, verbose) for n in names)))

    results = asyncio.run(gather())
    if as_json:
        click.echo(json.dumps({name: {"models": details, "error": error} for name, details, error in results}, indent=2))
    else:
        for name, details, error in results:
            if error is not None:
                click.secho(f"{name}: error: {error}", fg="red")
                continue
            if not quiet:
                click.secho(f"{name} ({len(details or [])} models)", bold=True)
            for d in details or []:
                extra = {k: v for k, v in d.items() if k != "id" and v not in (None, "")}
                info = ("  " + ", ".join(f"{k}={v}" for k, v in extra.items())) if verbose and extra else ""
                click.echo(f"{'' if quiet else '  '}{d['id']}{info}")
    if all(error is not None for _, _, error in results):
        raise SystemExit(1)
