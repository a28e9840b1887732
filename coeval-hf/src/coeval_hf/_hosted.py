"""The part both local interfaces share: a model served by the process-wide host.

The host keeps one model resident at a time and batches the calls queued for it; an
interface only says which weights it needs (``slot_key``: equal keys share one loaded copy)
and how to load them (``_load``). Sampling parameters are checked when the interface is
built, so a bad value stops the run before any model is loaded.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any

from coeval.interfaces.base import GenerateRequest, GenerateResult, Interface

from coeval_hf._host import ModelSlot, get_host
from coeval_hf._params import read_sampling

if TYPE_CHECKING:
    from coeval.config.credentials import Credentials
    from coeval.config.model import ModelConfig

__all__ = ["HostedInterface"]


class HostedInterface(Interface):
    takes_seed = True  # ``seed`` seeds the sampler (greedy calls ignore it)

    def __init__(self, model: ModelConfig, credentials: Credentials | None = None) -> None:
        super().__init__(model, credentials)
        self.label = f"model {model.name!r} ({self.name})"
        self._slot: ModelSlot | None = None

    def _check_sampling(self) -> None:
        """Sampling values of ``parameters`` and of every role's overrides. Raised without
        the label: the runner names the model itself."""
        params = self.model.parameters
        read_sampling(params, "")
        for role, overrides in self.model.role_parameters.items():
            read_sampling({**params, **overrides}, f"role_parameters.{role}")

    @property
    @abc.abstractmethod
    def slot_key(self) -> str:
        """Identifies the loaded weights; interfaces with equal keys share one copy."""

    @abc.abstractmethod
    def _load(self) -> Any:
        """Load the engine (in the host's worker thread)."""

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        read_sampling(request.params, self.label)
        if self._slot is None:
            self._slot = get_host().acquire(self.slot_key, self._load, self.label)
        return await get_host().submit(self._slot, request)

    def stop_queued(self) -> None:
        """Calls queued for this model (and the others sharing its weights) are given back:
        the worker runs one call at a time, so a queue of them would take a call's time each."""
        if self._slot is not None:
            get_host().give_back(self._slot)

    def connection_key(self) -> str:
        return f"{self.name}:{self.model.name}"

    async def aclose(self) -> None:
        if self._slot is not None:
            get_host().release(self._slot)
            self._slot = None
