"""OpenAI and Azure OpenAI Batch API: a JSONL file of chat-completion requests uploaded with
``purpose=batch``, one ``/v1/batches`` job per model, results in the output file and failed
requests in the error file (both read; a request in neither is reported missing).

Limits: 50,000 requests and 200 MB per input file; jobs are chunked below both.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from coeval.batching.base import BatchJobStatus, BatchRunner
from coeval.interfaces.base import GenerateRequest, GenerateResult, ModelError

from coeval_providers.batch._common import dump_jsonl, line_error, load_jsonl
from coeval_providers.interfaces.azure_openai import AzureOpenAIInterface
from coeval_providers.interfaces.openai_compat import OpenAIInterface, parse_chat_completion

__all__ = ["AzureOpenAIBatchRunner", "OpenAIBatchRunner"]

_STATES = {"validating": "pending", "in_progress": "running", "finalizing": "running", "cancelling": "running",
           "completed": "completed", "failed": "failed", "expired": "expired", "cancelled": "cancelled"}


class OpenAIBatchRunner(BatchRunner):
    interface_name = "openai"
    max_requests_per_job = 50_000
    #: 200 MB per input file, with a margin.
    max_bytes_per_job = 190 * 1024 * 1024
    poll_interval_s = 30.0
    endpoint = "/v1/chat/completions"
    interface_class: type[OpenAIInterface] | type[AzureOpenAIInterface] = OpenAIInterface

    def __init__(self, model: Any, credentials: Any = None) -> None:
        super().__init__(model, credentials)
        self.iface = self.interface_class(model, credentials)

    def _line(self, custom_id: str, request: GenerateRequest) -> dict[str, Any]:
        return {"custom_id": custom_id, "method": "POST", "url": self.endpoint, "body": self.iface.build_body(request)}

    def chunk_requests(self, requests: Sequence[tuple[str, GenerateRequest]]) -> list[list[tuple[str, GenerateRequest]]]:
        """Split below both the request-count and the file-size limit."""
        chunks: list[list[tuple[str, GenerateRequest]]] = [[]]
        size = 0
        for custom_id, request in requests:
            line = len(json.dumps(self._line(custom_id, request)).encode()) + 1
            if chunks[-1] and (len(chunks[-1]) >= self.max_requests_per_job or size + line > self.max_bytes_per_job):
                chunks.append([])
                size = 0
            chunks[-1].append((custom_id, request))
            size += line
        return [c for c in chunks if c]

    async def _call(self, coro: Any) -> Any:
        try:
            return await coro
        except ModelError:
            raise
        except Exception as exc:
            raise self.iface.classify_error(exc) from None

    async def submit(self, requests: Sequence[tuple[str, GenerateRequest]]) -> str:
        client = self.iface.client()
        data = dump_jsonl(self._line(cid, req) for cid, req in requests)
        uploaded = await self._call(client.files.create(file=("coeval-batch.jsonl", data, "application/jsonl"), purpose="batch"))
        batch = await self._call(client.batches.create(
            input_file_id=uploaded.id, endpoint=self.endpoint, completion_window="24h",
            metadata={"coeval_model": self.model.name[:64], "requests": str(len(requests))},
        ))
        return str(batch.id)

    async def poll(self, job_id: str) -> BatchJobStatus:
        batch = await self._call(self.iface.client().batches.retrieve(job_id))
        counts = batch.request_counts
        message = ""
        if batch.errors is not None and batch.errors.data:
            message = "; ".join(str(e.message) for e in batch.errors.data if e.message)[:500]
        return BatchJobStatus(job_id=job_id, state=_STATES.get(batch.status, "running"),  # type: ignore[arg-type]
                              total=counts.total if counts else 0, succeeded=counts.completed if counts else 0,
                              failed=counts.failed if counts else 0, message=message)

    async def _file_lines(self, file_id: str | None) -> list[dict[str, Any]]:
        if not file_id:
            return []
        content = await self._call(self.iface.client().files.content(file_id))
        return load_jsonl(content.content)

    async def collect(self, job_id: str) -> Mapping[str, GenerateResult | ModelError]:
        client = self.iface.client()
        batch = await self._call(client.batches.retrieve(job_id))
        out: dict[str, GenerateResult | ModelError] = {}
        provider = self.iface.name
        for line in await self._file_lines(batch.output_file_id) + await self._file_lines(batch.error_file_id):
            custom_id = str(line.get("custom_id"))
            response = line.get("response") or {}
            error = line.get("error") or {}
            status = response.get("status_code")
            if status == 200 and not error:
                try:
                    text, tokens_in, tokens_out, model, _ = parse_chat_completion(provider, response.get("body"))
                    out[custom_id] = self.iface.result(text, tokens_in, tokens_out, model, batch=True)
                except ModelError as exc:
                    out[custom_id] = exc
            else:
                out[custom_id] = line_error(provider, status, response.get("body") or error, error.get("code"))
        return out

    async def cancel(self, job_id: str) -> None:
        await self._call(self.iface.client().batches.cancel(job_id))

    async def aclose(self) -> None:
        await self.iface.aclose()


class AzureOpenAIBatchRunner(OpenAIBatchRunner):
    """Azure's Global Batch: the same file + job API under ``/openai``; each line's ``model`` is
    the batch deployment (``parameters.batch_deployment``, else the deployment)."""

    interface_name = "azure_openai"
    endpoint = "/chat/completions"
    interface_class = AzureOpenAIInterface

    def _line(self, custom_id: str, request: GenerateRequest) -> dict[str, Any]:
        line = super()._line(custom_id, request)
        line["body"]["model"] = str(self.model.parameters.get("batch_deployment") or self.iface.deployment)  # type: ignore[union-attr]
        return line
