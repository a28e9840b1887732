"""The provider batch-runner contract.

A runner talks to one provider's batch API for one model: it submits a job, polls it and
collects per-request results. Orchestration (chunking to the provider's limits, persisting
job ids to ``pending_batches.json`` *before* polling so a crash never re-submits, deadlines,
turning results into records) belongs to the core, not to runners. It sits beside
:class:`coeval.interfaces.Interface`, below the plugin contract that names it
(``BatchRunnerFactory``); the batching machinery lives in :mod:`coeval.scheduler.batching`.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal

import attrs

from coeval.interfaces.base import GenerateRequest, GenerateResult, ModelError

if TYPE_CHECKING:
    from coeval.config.credential_record import Credentials
    from coeval.config.model import ModelConfig

__all__ = ["TERMINAL_STATES", "BatchJobStatus", "BatchRunner", "BatchState"]

BatchState = Literal["pending", "running", "completed", "failed", "expired", "cancelled"]
TERMINAL_STATES: frozenset[str] = frozenset({"completed", "failed", "expired", "cancelled"})


@attrs.frozen
class BatchJobStatus:
    job_id: str
    state: BatchState
    total: int = 0
    succeeded: int = 0
    failed: int = 0
    message: str = ""

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES


class BatchRunner(abc.ABC):
    """One provider's batch API, used for one model at a time (never mix models in a job)."""

    interface_name: str = ""
    #: Most requests one job may hold; the core chunks above this.
    max_requests_per_job: int = 10_000
    #: Seconds between polls at first; the core backs off from here.
    poll_interval_s: float = 30.0

    def __init__(self, model: ModelConfig, credentials: Credentials | None = None) -> None:
        self.model = model
        self.credentials = credentials

    @abc.abstractmethod
    async def submit(self, requests: Sequence[tuple[str, GenerateRequest]]) -> str:
        """Create a job for ``(custom_id, request)`` pairs and return the provider's job id."""

    @abc.abstractmethod
    async def poll(self, job_id: str) -> BatchJobStatus:
        """Where the job stands."""

    @abc.abstractmethod
    async def collect(self, job_id: str) -> Mapping[str, GenerateResult | ModelError]:
        """Per custom_id: the result, or the error for requests that failed (partial failures,
        error files). Requests missing from the output are reported as errors too."""

    async def cancel(self, job_id: str) -> None:
        return None

    async def aclose(self) -> None:
        return None
