"""What a registered interface declares about itself (:class:`InterfaceFacts`), which
validation, planning and the run read instead of a table of interfaces in the core.

Plain data in the config layer, so the rules that check a config against the installed
interfaces need nothing of the plugin contract; the contract re-exports both classes to
plugins (:mod:`coeval.contract.types`), whose ``register_interfaces`` options they are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from coeval.config.model import ModelConfig

__all__ = ["InterfaceFacts", "TokenSeconds"]


@attrs.frozen
class TokenSeconds:
    """How fast a local engine reads a prompt and writes a reply, for the plan's time
    estimate (what ``seconds_per_token`` of :class:`InterfaceFacts` may return)."""

    #: seconds per prompt token read
    prompt: float
    #: seconds per reply token written
    reply: float
    #: seconds per reply token written under a JSON schema (a grammar can slow the engine's
    #: sampling); None: as ``reply``
    structured: float | None = None
    #: the engine that runs the model's calls (models with equal values share one), when it
    #: keeps its last prompt so that a prompt beginning like it reads only the rest
    #: (llama.cpp's prompt cache); None: every prompt is read whole
    engine: str | None = None


@attrs.frozen
class InterfaceFacts:
    """What a registered interface declares about itself; the core keeps no table of
    interfaces, so validation, planning and the run ask these."""

    name: str
    #: a model of this interface must name ``parameters.model``
    requires_model: bool = True
    #: its models make no calls: their datapoints come from elsewhere (``coeval ingest``)
    virtual_teacher: bool = False
    #: a batch runner is registered for it, so ``experiment.batch`` and ``batch_enabled`` may name it
    batches: bool = False
    #: item-quality rule ids that say nothing about this interface's teachers
    exempt_item_checks: tuple[str, ...] = ()
    #: environment variables its SDK reads for the key, in order of preference (the key
    #: file's entry and a model's ``access_key`` come first)
    key_env: tuple[str, ...] = ()
    #: fields of a structured key-file entry -> environment variables to fall back on
    key_fields: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict, hash=False)
    #: the sampling keys ``parameters`` may hold besides CoEval's own settings (rule V-45);
    #: None: not declared, not checked
    sampling_keys: frozenset[str] | None = None
    #: the engines a ``parameters.cluster`` block may serve its models with, the default
    #: first (rule V-55); empty: its models are not served on a cluster
    cluster_engines: tuple[str, ...] = ()
    #: typical output tokens per second of one call, for the plan's time estimate (None: a
    #: default speed)
    tokens_per_s: float | None = None
    #: its calls run one at a time on this machine, whatever the concurrency (a local engine
    #: in the run's process): the time estimate adds them up rather than overlapping them
    one_at_a_time: bool = False
    #: seconds one call takes per token it reads or writes (a float), or per prompt and per
    #: reply token (:class:`TokenSeconds`), for the model's settings (a local engine: measured
    #: on this machine, or from its file size and threads); None or returning None: ``tokens_per_s``
    seconds_per_token: Callable[[ModelConfig], float | TokenSeconds | None] | None = attrs.field(
        default=None, hash=False)
    #: ``check(parameters, model_name)``: why a model's ``parameters`` cannot be used (rule
    #: V-20, before any call), or None; None: no check beyond the sampling keys
    parameter_problem: Callable[[Mapping[str, Any], str], str | None] | None = attrs.field(default=None, hash=False)
