"""Hook implementations of coeval-hf (registered through the `coeval` entry point).

Only names and classes are registered here; torch, transformers and xllamacpp are imported
when a model is first loaded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coeval.hookspecs import hookimpl

if TYPE_CHECKING:
    from coeval import RegisterInterface


@hookimpl
def register_interfaces(register: RegisterInterface) -> None:
    from coeval_hf.huggingface import HuggingFaceInterface
    from coeval_hf.llamacpp import LlamaCppInterface

    register("huggingface", HuggingFaceInterface)
    register("llamacpp", LlamaCppInterface, requires_model=False)
