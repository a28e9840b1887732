"""``coeval serve``: deploy a config's cluster-served models without running anything.

The applications stay up until ``coeval serve --stop``: runs of the same config (or of any
config whose model has the same settings) reuse them, and ``vllm``-interface models on
other machines can point their ``base_url`` at the printed URLs.
"""

from __future__ import annotations

from typing import Any

import click
from coeval.cli.errors import UserError, user_errors
from coeval.config.cluster_block import INSTALL_HINT, ray_installed, read_cluster

__all__ = ["command"]


def _cluster_models(config_path: str) -> list[dict[str, Any]]:
    from coeval.plugins.config_loading import load_config  # on use: `coeval --help` lists this command

    config = load_config(config_path, check_filesystem=False)
    models = [{"name": m.name, "interface": m.interface, "parameters": dict(m.parameters)}
              for m in config.models if "cluster" in m.parameters]
    if not models:
        raise UserError(f"{config_path}: no model has parameters.cluster, so there is nothing to serve",
                        hint="add a cluster: block to a huggingface or llamacpp model (docs/scaling.md)")
    return models


@click.command("serve")
@click.argument("config_file", required=False, metavar="[CONFIG]")
@click.option("--config", "config_option", metavar="FILE", help="Experiment config whose cluster models to serve.")
@click.option("--stop", is_flag=True, help="Remove the served applications (the config's, or every CoEval one).")
@click.option("--address", default=None, metavar="ADDR",
              help="Ray cluster to use with --stop and no config: auto (default) or ray://host:port.")
@user_errors
def command(config_file: str | None, config_option: str | None, stop: bool, address: str | None) -> None:
    """Serve a config's local models on Ray and print their OpenAI-compatible URLs.

    Every huggingface or llamacpp model with parameters.cluster is deployed as a Ray Serve
    application (or found live). Runs reuse them; point vllm-interface models on other
    machines at the URLs printed. `coeval serve --stop` removes them.
    """
    if not ray_installed():
        raise UserError("coeval serve needs Ray, which is not installed", hint=INSTALL_HINT)
    from coeval_hf import ray_serving

    models: list[dict[str, Any]] = []
    if config_file or config_option or not stop:
        from coeval.cli.config_arg import choose_config_path  # loads the config loader: on use

        models = _cluster_models(choose_config_path(config_file, config_option, "serve"))
    from coeval_hf.cluster_served import CLUSTER_ENGINES

    specs = [(m, read_cluster(m["parameters"]["cluster"], CLUSTER_ENGINES.get(m["interface"], ("transformers",))[0]))
             for m in models]
    try:
        ray_serving.connect(specs[0][1].address if specs else (address or "auto"))
        if stop:
            names = [ray_serving.app_name(m, s) for m, s in specs] if specs else None
            removed = ray_serving.remove(names)
            click.echo(f"removed {len(removed)} application{'s' if len(removed) != 1 else ''}"
                       + (f": {', '.join(removed)}" if removed else ""))
            return
        for model, spec in specs:
            size = f"{spec.min_replicas}-{spec.max_replicas}" if spec.autoscaling else str(spec.replicas)
            click.echo(f"deploying {model['name']} ({size} replicas, engine {spec.engine}) ...", err=True)
            wait_s = float(model["parameters"].get("connect_wait_s", 300.0))
            deployment = ray_serving.deploy(model, spec, wait_s=wait_s)
            state = "deployed" if deployment.created else "already serving"
            click.echo(f"{model['name']}\t{deployment.base_url}\t{state} ({deployment.name})")
    except ray_serving.ServeError as exc:
        raise UserError(str(exc)) from None
    click.echo("OpenAI-compatible: POST <url>/chat/completions, GET <url>/models. Stop with: coeval serve --stop",
               err=True)
