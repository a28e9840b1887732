"""OpenAI and Azure OpenAI Batch API: a JSONL file of chat-completion requests uploaded with
``purpose=batch``, one ``/v1/batches`` job per model, results in the output file and failed
requests in the error file (both read; a request in neither is reported missing).

Limits: 50,000 requests and 200 MB per input file; jobs are chunked below both.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from coeval.interfaces.base import GenerateRequest, GenerateResult, ModelError
from coeval.scheduler.batching.base import BatchJobStatus

from coeval_providers.batch._common import ProviderBatchRunner, dump_jsonl, line_error, load_jsonl
from coeval_providers.interfaces.azure_openai import AzureOpenAIInterface
from coeval_providers.interfaces.openai_compat import (
    OpenAICompatInterface,
    OpenAIInterface,
    parse_chat_completion,
)

__all__ = ["AzureOpenAIBatchRunner", "OpenAIBatchRunner", "OpenAIFileBatchRunner"]

_STATES = {"validating": "pending", "in_progress": "running", "finalizing": "running", "cancelling": "running",
           "completed": "completed", "failed": "failed", "expired": "expired", "cancelled": "cancelled"}

CompatT = TypeVar("CompatT", bound=OpenAICompatInterface)


class OpenAIFileBatchRunner(ProviderBatchRunner[CompatT]):
    """A runner whose requests and results travel as OpenAI-shaped JSONL files through the
    OpenAI SDK's files API (OpenAI, Azure OpenAI, Mistral)."""

    async def _upload(self, data: bytes) -> str:
        """Upload one job's input file; returns its file id."""
        uploaded = await self._call(self.iface.client().files.create(
            file=("coeval-batch.jsonl", data, "application/jsonl"), purpose="batch"))
        return str(uploaded.id)

    async def _collect_files(self, *file_ids: str | None) -> dict[str, GenerateResult | ModelError]:
        """The results in a job's output and error files, one
        ``{"custom_id", "response": {"status_code", "body"}, "error"}`` per line."""
        out: dict[str, GenerateResult | ModelError] = {}
        provider = self.iface.name
        for file_id in file_ids:
            if not file_id:
                continue
            content = await self._call(self.iface.client().files.content(file_id))
            for line in load_jsonl(content.content):
                custom_id = str(line.get("custom_id"))
                response = line.get("response") or {}
                error = line.get("error") or {}
                status = response.get("status_code")
                if status == 200 and not error:
                    try:
                        text, tokens_in, tokens_out, model, finish = parse_chat_completion(provider, response.get("body"))
                        out[custom_id] = self.iface.result(text, tokens_in, tokens_out, model, batch=True, finish_reason=finish)
                    except ModelError as exc:
                        out[custom_id] = exc
                else:
                    out[custom_id] = line_error(provider, status, response.get("body") or error,
                                                error.get("code") if isinstance(error, dict) else None)
        return out


class OpenAIBatchRunner(OpenAIFileBatchRunner[OpenAICompatInterface]):
    interface_name = "openai"
    max_requests_per_job = 50_000
    #: 200 MB per input file, with a margin.
    max_bytes_per_job = 190 * 1024 * 1024
    poll_interval_s = 30.0
    endpoint = "/v1/chat/completions"
    interface_class: type[OpenAICompatInterface] = OpenAIInterface

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

    async def submit(self, requests: Sequence[tuple[str, GenerateRequest]]) -> str:
        file_id = await self._upload(dump_jsonl(self._line(cid, req) for cid, req in requests))
        batch = await self._call(self.iface.client().batches.create(
            input_file_id=file_id, endpoint=self.endpoint, completion_window="24h",
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

    async def collect(self, job_id: str) -> Mapping[str, GenerateResult | ModelError]:
        batch = await self._call(self.iface.client().batches.retrieve(job_id))
        return await self._collect_files(batch.output_file_id, batch.error_file_id)

    async def cancel(self, job_id: str) -> None:
        await self._call(self.iface.client().batches.cancel(job_id))


class AzureOpenAIBatchRunner(OpenAIBatchRunner):
    """Azure's Global Batch: the same file + job API under ``/openai``; each line's ``model`` is
    the batch deployment (``parameters.batch_deployment``, else the deployment)."""

    interface_name = "azure_openai"
    endpoint = "/chat/completions"
    interface_class = AzureOpenAIInterface

    def _line(self, custom_id: str, request: GenerateRequest) -> dict[str, Any]:
        line = super()._line(custom_id, request)
        line["body"]["model"] = str(self.model.parameters.get("batch_deployment") or getattr(self.iface, "deployment", ""))
        return line
