"""Reading a local model's ``parameters``: one place, one kind of error.

Both local interfaces share the sampling keys (``max_tokens`` / ``max_new_tokens``,
``temperature``, ``top_p``, ``top_k``, ``seed``, ``repetition_penalty``) so a config can
move a model between transformers and llama.cpp without renaming anything. A bad value is a
:class:`ParameterError` naming the model, the field and the rule, raised before any model is
loaded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
from coeval.interfaces.base import FatalModelError

__all__ = ["DEFAULT_MAX_TOKENS", "ParameterError", "Sampling", "prefixed", "read_bool", "read_int", "read_sampling"]

DEFAULT_MAX_TOKENS = 512


class ParameterError(FatalModelError):
    """A model's ``parameters`` hold a value the local engine cannot use."""


@attrs.frozen
class Sampling:
    """How to decode one call. ``temperature == 0`` means greedy (``do_sample=False``)."""

    max_tokens: int = DEFAULT_MAX_TOKENS
    temperature: float = 0.7
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = None
    repetition_penalty: float | None = None

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


def prefixed(label: str, message: str) -> str:
    """``label: message``; an empty label (errors raised while the runner builds the
    interface, which names the model itself) leaves the message alone."""
    return f"{label}: {message}" if label else message


def _where(label: str, field: str) -> str:
    return prefixed(label, f"parameters.{field}")


def read_int(params: Mapping[str, Any], field: str, label: str, *, minimum: int = 0, default: int | None = None) -> int | None:
    value = params.get(field, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ParameterError(f"{_where(label, field)} must be an integer >= {minimum}, got {value!r}")
    return value


def read_float(params: Mapping[str, Any], field: str, label: str, *, minimum: float = 0.0,
               maximum: float | None = None) -> float | None:
    value = params.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum or (
        maximum is not None and value > maximum
    ):
        bound = f"between {minimum} and {maximum}" if maximum is not None else f">= {minimum}"
        raise ParameterError(f"{_where(label, field)} must be a number {bound}, got {value!r}")
    return float(value)


def read_bool(params: Mapping[str, Any], field: str, label: str, default: bool = False) -> bool:
    value = params.get(field, default)
    if not isinstance(value, bool):
        raise ParameterError(f"{_where(label, field)} must be true or false, got {value!r}")
    return value


def read_sampling(params: Mapping[str, Any], label: str) -> Sampling:
    """The sampling settings of one call (``max_new_tokens`` wins over ``max_tokens``)."""
    field = "max_new_tokens" if params.get("max_new_tokens") is not None else "max_tokens"
    max_tokens = read_int(params, field, label, minimum=1, default=DEFAULT_MAX_TOKENS)
    temperature = read_float(params, "temperature", label, maximum=10.0)
    top_p = read_float(params, "top_p", label, maximum=1.0)
    top_k = read_int(params, "top_k", label)
    seed = read_int(params, "seed", label)
    penalty = read_float(params, "repetition_penalty", label)
    if penalty is None:
        penalty = read_float(params, "repeat_penalty", label)  # llama.cpp's spelling
    return Sampling(
        max_tokens=max_tokens if max_tokens is not None else DEFAULT_MAX_TOKENS,
        temperature=0.7 if temperature is None else temperature,
        top_p=top_p,
        top_k=top_k or None,
        seed=seed,
        repetition_penalty=penalty,
    )
