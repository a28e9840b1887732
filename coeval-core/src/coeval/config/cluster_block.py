"""``parameters.cluster`` of a local model: serve it on a Ray cluster (rule V-55).

A ``huggingface`` or ``llamacpp`` model with a ``cluster:`` block is deployed as a Ray Serve
application and its calls go through the application's OpenAI-compatible route (see
docs/scaling.md). This module only reads the block: it knows its keys, their rules and
whether Ray is importable, and imports nothing heavy, so validation stays fast and works
where Ray is not installed (there, a ``cluster:`` block is an error with the install hint).
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs

if TYPE_CHECKING:
    from coeval.config.interface_facts import InterfaceFacts

__all__ = [
    "INSTALL_HINT",
    "RULE",
    "ClusterSpec",
    "check_cluster_blocks",
    "cluster_problems",
    "ray_installed",
    "read_cluster",
]

RULE = "V-55"
INSTALL_HINT = "pip install 'coeval-hf[ray]'"
#: the engine of a model whose interface declares none
_FALLBACK_ENGINE = "transformers"
#: engines an interface may declare that cluster serving does not run yet
_NOT_BUILT = frozenset({"vllm"})
_KEYS = ("address", "replicas", "min_replicas", "max_replicas", "num_gpus", "num_cpus", "engine", "keep_serving")
_RAY_CLIENT = re.compile(r"^ray://[^\s:/]+:\d{1,5}$")


@attrs.frozen
class ClusterSpec:
    """A valid ``cluster`` block. ``replicas`` is fixed when ``min_replicas`` is None."""

    address: str = "auto"
    replicas: int = 1
    min_replicas: int | None = None
    max_replicas: int | None = None
    num_gpus: float = 0.0
    num_cpus: float = 1.0
    engine: str = "transformers"
    keep_serving: bool = False

    @property
    def autoscaling(self) -> bool:
        return self.min_replicas is not None


def ray_installed() -> bool:
    """Whether ``import ray`` would work (``sys.modules['ray'] = None`` counts as missing)."""
    if "ray" in sys.modules:
        return sys.modules["ray"] is not None
    return importlib.util.find_spec("ray") is not None


def _count(block: Mapping[str, Any], key: str, minimum: int) -> tuple[int | None, str | None]:
    value = block.get(key)
    if value is None:
        return None, None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        return None, f"{key} must be an integer >= {minimum}; got {value!r}"
    return value, None


def _amount(block: Mapping[str, Any], key: str, default: float) -> tuple[float, str | None]:
    value = block.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return default, f"{key} must be a number >= 0 (a share of one device is allowed, e.g. 0.5); got {value!r}"
    return float(value), None


def cluster_problems(
    block: Any, interface: str, engines_of: Mapping[str, Sequence[str]]
) -> list[tuple[str, str, str]]:
    """``(field, message, fix)`` for every problem of one block; empty when it is valid.
    ``engines_of``: interface -> the engines its plugin declared for cluster serving, the
    default first (interfaces that declared none may be left out)."""
    if not isinstance(block, Mapping):
        return [("", f"must be a mapping of {', '.join(_KEYS)}; got {block!r}", "see docs/scaling.md")]
    out: list[tuple[str, str, str]] = []
    servable = [name for name, engines in engines_of.items() if engines]
    own = tuple(engines_of.get(interface, ()))
    default = own[0] if own else _FALLBACK_ENGINE
    if not own:
        which = f"only {' and '.join(servable)} models" if servable else "no installed interface's models"
        out.append(("", f"{which} can be served on a cluster, not '{interface}'",
                    "point a vllm-interface model at the served URL instead (base_url)"))
    for key in block:
        if key not in _KEYS:
            out.append((str(key), f"unknown key '{key}'", f"use one of: {', '.join(_KEYS)}"))
    address = block.get("address", "auto")
    if not isinstance(address, str) or not (address == "auto" or _RAY_CLIENT.match(address)):
        out.append(("address", f"address must be auto or ray://host:port; got {address!r}",
                    "auto joins the cluster this machine belongs to (ray start, RAY_ADDRESS)"))
    replicas, why = _count(block, "replicas", 1)
    low, why_low = _count(block, "min_replicas", 0)
    high, why_high = _count(block, "max_replicas", 1)
    out += [(k, w, "e.g. 2") for k, w in (("replicas", why), ("min_replicas", why_low), ("max_replicas", why_high)) if w]
    if replicas is not None and (low is not None or high is not None):
        out.append(("replicas", "give replicas (a fixed number) or min_replicas/max_replicas (autoscaling), not both",
                    "remove replicas, or remove min_replicas and max_replicas"))
    if (low is None) != (high is None) and not why_low and not why_high:
        out.append(("min_replicas" if low is None else "max_replicas",
                    "min_replicas and max_replicas go together", "set both, e.g. min_replicas: 1, max_replicas: 4"))
    if low is not None and high is not None and low > high:
        out.append(("min_replicas", f"min_replicas ({low}) is more than max_replicas ({high})", "swap them"))
    for key in ("num_gpus", "num_cpus"):
        _, why = _amount(block, key, 0.0)
        if why:
            out.append((key, why, f"e.g. {key}: 1"))
    engine = block.get("engine", default)
    every = tuple(dict.fromkeys(e for name in servable for e in engines_of[name])) or (_FALLBACK_ENGINE,)
    if engine not in every:
        out.append(("engine", f"engine must be one of {', '.join(every)}; got {engine!r}", f"use {default}"))
    elif own and engine not in own and len(own) == 1:
        out.append(("engine", f"a {interface} model runs on engine {own[0]}, not {engine!r}", "remove engine"))
    elif own and engine not in own:
        out.append(("engine", f"a {interface} model runs on engine {' or '.join(own)}, not {engine}",
                    f"use engine: {default}"))
    elif engine in _NOT_BUILT:
        # not built yet: a replica runs the huggingface interface (transformers), not vLLM
        out.append(("engine", "engine vllm is not supported in cluster serving yet",
                    "use engine: transformers, or run vLLM yourself and point a vllm-interface model at it"))
    if "keep_serving" in block and not isinstance(block["keep_serving"], bool):
        out.append(("keep_serving", f"keep_serving must be true or false; got {block['keep_serving']!r}",
                    "true leaves the deployment up after the run"))
    if not out and not ray_installed():
        out.append(("", "serving a model on a cluster needs Ray, which is not installed", INSTALL_HINT))
    return out


def read_cluster(block: Mapping[str, Any], default_engine: str) -> ClusterSpec:
    """The spec of a block :func:`cluster_problems` accepted; ``default_engine``: the first
    engine the model's interface declared."""
    low, high = block.get("min_replicas"), block.get("max_replicas")
    return ClusterSpec(
        address=str(block.get("address", "auto")),
        replicas=int(block.get("replicas", 1 if low is None else low or 1)),
        min_replicas=None if low is None else int(low),
        max_replicas=None if high is None else int(high),
        num_gpus=float(block.get("num_gpus", 0.0)),
        num_cpus=float(block.get("num_cpus", 1.0)),
        engine=str(block.get("engine", default_engine)),
        keep_serving=bool(block.get("keep_serving", False)),
    )


class _Collects(Protocol):
    @property
    def models(self) -> list[tuple[int, dict[str, Any]]]: ...

    @property
    def interfaces(self) -> Mapping[str, InterfaceFacts]: ...

    def add(self, rule: str, path: Any, message: str, fix: str) -> None: ...


def check_cluster_blocks(validator: _Collects) -> None:
    """V-55: every model's ``parameters.cluster`` is valid and Ray is installed."""
    engines_of = {name: facts.cluster_engines for name, facts in validator.interfaces.items()}
    for i, model in validator.models:
        params = model.get("parameters")
        if not isinstance(params, dict) or "cluster" not in params:
            continue
        for field, message, fix in cluster_problems(params["cluster"], str(model.get("interface")), engines_of):
            path: tuple[str | int, ...] = ("models", i, "parameters", "cluster") + ((field,) if field else ())
            validator.add(RULE, path, f"cluster: {message}", fix)
