"""Hook implementations of coeval-hf (registered through the `coeval` entry point).

Only names and classes are registered here; torch, transformers, xllamacpp and Ray are
imported when a model is first loaded or served.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coeval.contract.hookspecs import hookimpl

if TYPE_CHECKING:
    from coeval import RegisterInterface


@hookimpl
def register_interfaces(register: RegisterInterface) -> None:
    from coeval_hf.cluster_served import CLUSTER_ENGINES, cluster_aware
    from coeval_hf.huggingface import HuggingFaceInterface
    from coeval_hf.llamacpp import LlamaCppInterface
    from coeval_hf.llamacpp_speed import seconds_per_token

    # a model with parameters.cluster is served on Ray (coeval_hf.cluster_served)
    register("huggingface", cluster_aware(HuggingFaceInterface), key_env=("HF_TOKEN",),
             cluster_engines=CLUSTER_ENGINES["huggingface"], tokens_per_s=25)
    register("llamacpp", cluster_aware(LlamaCppInterface), requires_model=False,
             cluster_engines=CLUSTER_ENGINES["llamacpp"], tokens_per_s=15, one_at_a_time=True,
             seconds_per_token=seconds_per_token)


@hookimpl
def register_commands(cli: Any) -> None:
    from coeval_hf.serve_cmd import command

    cli.add_command(command)
