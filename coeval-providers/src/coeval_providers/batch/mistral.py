"""Mistral batch jobs: a JSONL file (``{"custom_id", "body"}`` per line) uploaded with
``purpose=batch``, then ``POST /v1/batch/jobs`` naming the model and the file; results and
errors come back as files in the OpenAI batch output shape.

The Mistral API is reached with the OpenAI SDK's client (its files endpoint and auth are the
same; the batch-job routes are called through the client's generic ``post``/``get``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from coeval.interfaces.base import GenerateRequest, GenerateResult, ModelError
from coeval.scheduler.batching.base import BatchJobStatus

from coeval_providers.batch._common import dump_jsonl
from coeval_providers.batch.openai import OpenAIFileBatchRunner
from coeval_providers.interfaces.openai_compat import MistralInterface

__all__ = ["MistralBatchRunner"]

_STATES = {"QUEUED": "pending", "RUNNING": "running", "CANCELLATION_REQUESTED": "running", "SUCCESS": "completed",
           "FAILED": "failed", "TIMEOUT_EXCEEDED": "expired", "CANCELLED": "cancelled"}


class MistralBatchRunner(OpenAIFileBatchRunner[MistralInterface]):
    interface_name = "mistral"
    interface_class = MistralInterface
    max_requests_per_job = 1_000_000
    poll_interval_s = 30.0

    async def submit(self, requests: Sequence[tuple[str, GenerateRequest]]) -> str:
        lines = []
        for cid, req in requests:
            body = self.iface.build_body(req)
            body.pop("model", None)
            lines.append({"custom_id": cid, "body": body})
        file_id = await self._upload(dump_jsonl(lines))
        job = await self._call(self.iface.client().post("/batch/jobs", cast_to=object, body={
            "input_files": [file_id], "endpoint": "/v1/chat/completions", "model": self.iface.model_id,
            "metadata": {"coeval_model": self.model.name[:64]}, "timeout_hours": 24,
        }))
        return str(job["id"])

    async def _job(self, job_id: str) -> dict[str, Any]:
        return await self._call(self.iface.client().get(f"/batch/jobs/{job_id}", cast_to=object))

    async def poll(self, job_id: str) -> BatchJobStatus:
        job = await self._job(job_id)
        errors = "; ".join(str(e.get("message", "")) for e in job.get("errors") or [] if isinstance(e, dict))
        return BatchJobStatus(job_id=job_id, state=_STATES.get(str(job.get("status")), "running"),  # type: ignore[arg-type]
                              total=int(job.get("total_requests") or 0), succeeded=int(job.get("succeeded_requests") or 0),
                              failed=int(job.get("failed_requests") or 0), message=errors[:500])

    async def collect(self, job_id: str) -> Mapping[str, GenerateResult | ModelError]:
        job = await self._job(job_id)
        return await self._collect_files(job.get("output_file"), job.get("error_file"))

    async def cancel(self, job_id: str) -> None:
        await self._call(self.iface.client().post(f"/batch/jobs/{job_id}/cancel", cast_to=object))
