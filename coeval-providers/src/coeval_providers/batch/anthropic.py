"""Anthropic Message Batches: one ``/v1/messages/batches`` job per model; results stream from
``results_url`` with a type per request (succeeded, errored, expired, canceled).

Limits: 100,000 requests and 256 MB per batch; custom ids match ``^[a-zA-Z0-9_-]{1,64}$``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from coeval.interfaces.base import (
    FatalModelError,
    GenerateRequest,
    GenerateResult,
    ModelError,
    TransientModelError,
)
from coeval.scheduler.batching.base import BatchJobStatus

from coeval_providers.batch._common import ProviderBatchRunner, line_error
from coeval_providers.interfaces.anthropic import AnthropicInterface, parse_message

__all__ = ["AnthropicBatchRunner"]

_FATAL_TYPES = {"invalid_request_error", "authentication_error", "permission_error", "not_found_error", "request_too_large"}


class AnthropicBatchRunner(ProviderBatchRunner[AnthropicInterface]):
    interface_name = "anthropic"
    interface_class = AnthropicInterface
    max_requests_per_job = 100_000
    poll_interval_s = 60.0

    async def submit(self, requests: Sequence[tuple[str, GenerateRequest]]) -> str:
        batch = await self._call(self.iface.client().messages.batches.create(
            requests=[{"custom_id": cid, "params": self.iface.params(req)} for cid, req in requests]
        ))
        return str(batch.id)

    async def poll(self, job_id: str) -> BatchJobStatus:
        batch = await self._call(self.iface.client().messages.batches.retrieve(job_id))
        c = batch.request_counts
        total = c.processing + c.succeeded + c.errored + c.canceled + c.expired
        if batch.processing_status != "ended":
            state = "running"
        elif c.expired and c.succeeded + c.errored == 0:
            state = "expired"
        elif c.canceled and c.succeeded + c.errored + c.expired == 0:
            state = "cancelled"
        else:
            state = "completed"
        return BatchJobStatus(job_id=job_id, state=state, total=total, succeeded=c.succeeded,  # type: ignore[arg-type]
                              failed=c.errored + c.expired + c.canceled)

    async def collect(self, job_id: str) -> Mapping[str, GenerateResult | ModelError]:
        out: dict[str, GenerateResult | ModelError] = {}
        decoder = await self._call(self.iface.client().messages.batches.results(job_id))
        try:
            async for entry in decoder:
                result = entry.result
                if result.type == "succeeded":
                    try:
                        text, tokens_in, tokens_out, model = parse_message("anthropic", result.message)
                        out[entry.custom_id] = self.iface.result(text, tokens_in, tokens_out, model, batch=True,
                                                                 finish_reason=getattr(result.message, "stop_reason", None))
                    except ModelError as exc:
                        out[entry.custom_id] = exc
                elif result.type == "errored":
                    inner = getattr(result.error, "error", None) or result.error
                    kind = str(getattr(inner, "type", "") or "")
                    message = str(getattr(inner, "message", "") or kind)
                    cls = FatalModelError if kind in _FATAL_TYPES else TransientModelError
                    out[entry.custom_id] = cls(f"anthropic batch: {kind}: {message}"[:400])
                else:
                    out[entry.custom_id] = line_error("anthropic", None, None, result.type)
        except ModelError:
            raise
        except Exception as exc:
            raise self.iface.classify_error(exc) from None
        return out

    async def cancel(self, job_id: str) -> None:
        await self._call(self.iface.client().messages.batches.cancel(job_id))
