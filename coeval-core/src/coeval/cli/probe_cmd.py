"""``coeval probe``: check that every model of a config answers, before paying for a run."""

from __future__ import annotations

import json
from typing import Any

import click

from coeval.cli.config_arg import choose_config_path
from coeval.cli.errors import echo_issues, user_errors
from coeval.config.credentials import KeyStore
from coeval.plugins.config_loading import load_config
from coeval.run.probe import probe_models


@click.command("probe")
@click.argument("config_arg", required=False, metavar="[CONFIG]")
@click.option("--config", "config_path", metavar="PATH", help="Experiment YAML file (or give it as CONFIG).")
@click.option("--probe", "mode", type=click.Choice(["full", "resume", "disable"]), default=None,
              help="Which models to probe (default: experiment.probe_mode). resume: only models with work left.")
@click.option("--probe-on-fail", "on_fail", type=click.Choice(["abort", "warn"]), default=None,
              help="abort: exit 2 when a model fails (default: experiment.probe_on_fail); warn: exit 0.")
@click.option("--keys", metavar="PATH", help="Provider key file (default: $COEVAL_KEYS_FILE, ./keys.yaml, ~/.coeval/keys.yaml).")
@click.option("--timeout", default=60.0, show_default=True, metavar="SECONDS", help="Per-model time limit.")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@user_errors
def command(
    config_arg: str | None,
    config_path: str | None,
    mode: str | None,
    on_fail: str | None,
    keys: str | None,
    timeout: float,
    as_json: bool,
) -> None:
    """Send one tiny request to each model of a config and report which ones answer.

    Makes one short call per model (a few tokens). Exit code 2 when a model fails and the
    probe-on-fail action is abort; 0 otherwise.
    """
    config = _load(choose_config_path(config_arg, config_path, "probe"), keys)
    mode = mode or config.experiment.probe_mode
    on_fail = on_fail or config.experiment.probe_on_fail
    results = probe_models(config, KeyStore.load(keys), mode, timeout_s=timeout)
    failed = [r for r in results if not r.ok]
    if as_json:
        click.echo(json.dumps({"mode": mode, "results": [r.to_dict() for r in results], "failed": len(failed)}, indent=2))
    else:
        width = max((len(r.model) for r in results), default=5)
        for r in results:
            if r.skipped:
                state, detail = click.style("skip", fg="yellow"), "not probed (virtual model, or no work left)"
            elif r.ok:
                state, detail = click.style("ok  ", fg="green"), f"{r.latency_s:.2f} s"
            else:
                state, detail = click.style("FAIL", fg="red"), str(r.error)
            click.echo(f"{state}  {r.model:<{width}}  {r.interface:<16} {detail}")
        probed = sum(1 for r in results if not r.skipped)
        click.echo(f"{probed - len(failed)} of {probed} probed model(s) answered" + (f"; {len(failed)} failed" if failed else ""))
    if failed and on_fail == "abort":
        raise SystemExit(2)


def _load(config_path: str, keys: str | None) -> Any:
    """The config, validated as for a run, but an existing run folder is fine here."""
    if keys:
        KeyStore.load(keys)
    config = load_config(config_path, keys_file=keys, allow_existing_run=True)
    if config.warnings:
        echo_issues(config.warnings)
    return config
