"""Gemini batch mode (Developer API) and Vertex AI batch prediction, through google-genai.

* ``gemini``: the requests go in a JSONL file (``{"key", "request"}`` per line) uploaded to
  the Files API; ``batches.create(model, src="files/...")``; results come back as a JSONL
  file of ``{"key", "response"}`` or ``{"key", "error"}`` lines.
* ``vertex``: the same lines go to Cloud Storage under ``batch_gcs_uri`` (a ``gs://bucket/prefix``
  from the model's parameters or the ``vertex`` block of the key file); the job writes
  ``predictions*.jsonl`` under its output prefix, each line echoing its input (``key`` and the
  request's ``labels.coeval_id`` both identify it) with ``response`` or an error ``status``.
"""

from __future__ import annotations

import asyncio
import io
import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from coeval.interfaces.base import (
    FatalModelError,
    GenerateRequest,
    GenerateResult,
    ModelError,
    TransientModelError,
)
from coeval.scheduler.batching.base import BatchJobStatus

from coeval_providers import _errors
from coeval_providers.batch._common import ProviderBatchRunner, dump_jsonl, line_error, load_jsonl
from coeval_providers.interfaces.gemini import (
    GeminiInterface,
    VertexInterface,
    parse_generate_response,
    rest_request,
)

__all__ = ["GeminiBatchRunner", "VertexBatchRunner"]

_STATES = {"JOB_STATE_QUEUED": "pending", "JOB_STATE_PENDING": "pending", "JOB_STATE_RUNNING": "running",
           "JOB_STATE_UPDATING": "running", "JOB_STATE_CANCELLING": "running", "JOB_STATE_PAUSED": "running",
           "JOB_STATE_SUCCEEDED": "completed", "JOB_STATE_PARTIALLY_SUCCEEDED": "completed",
           "JOB_STATE_FAILED": "failed", "JOB_STATE_CANCELLED": "cancelled", "JOB_STATE_EXPIRED": "expired"}


def _state_name(state: Any) -> str:
    return str(getattr(state, "name", None) or getattr(state, "value", None) or state)


class GeminiBatchRunner(ProviderBatchRunner[GeminiInterface]):
    interface_name = "gemini"
    max_requests_per_job = 50_000
    poll_interval_s = 60.0
    interface_class: type[GeminiInterface] = GeminiInterface

    def _lines(self, requests: Sequence[tuple[str, GenerateRequest]]) -> bytes:
        return dump_jsonl({"key": cid, "request": rest_request(req)} for cid, req in requests)

    async def submit(self, requests: Sequence[tuple[str, GenerateRequest]]) -> str:
        aio = self.iface.client().aio
        uploaded = await self._call(aio.files.upload(
            file=io.BytesIO(self._lines(requests)),
            config={"mime_type": "application/jsonl", "display_name": f"coeval-{self.model.name}"[:120]},
        ))
        job = await self._call(aio.batches.create(model=self.iface.model_id, src=uploaded.name,
                                                  config={"display_name": f"coeval-{self.model.name}"[:120]}))
        return str(job.name)

    async def poll(self, job_id: str) -> BatchJobStatus:
        job = await self._call(self.iface.client().aio.batches.get(name=job_id))
        state = _STATES.get(_state_name(job.state), "running")
        stats = getattr(job, "batch_stats", None)
        message = str(getattr(getattr(job, "error", None), "message", "") or "")
        return BatchJobStatus(job_id=job_id, state=state,  # type: ignore[arg-type]
                              total=int(getattr(stats, "request_count", 0) or 0),
                              succeeded=int(getattr(stats, "successful_request_count", 0) or 0),
                              failed=int(getattr(stats, "failed_request_count", 0) or 0), message=message)

    def _parse_line(self, line: Mapping[str, Any]) -> GenerateResult | ModelError:
        response = line.get("response")
        if response:
            try:
                text, tokens_in, tokens_out, model = parse_generate_response(self.iface.name, response)
                return self.iface.result(text, tokens_in, tokens_out, model, batch=True)
            except ModelError as exc:
                return exc
        error = line.get("error") or line.get("status")
        if isinstance(error, Mapping):
            return line_error(self.iface.name, int(error.get("code") or 0) or None, {"error": error})
        return TransientModelError(f"{self.iface.name} batch: request failed: {str(error)[:300]}")

    async def collect(self, job_id: str) -> Mapping[str, GenerateResult | ModelError]:
        aio = self.iface.client().aio
        job = await self._call(aio.batches.get(name=job_id))
        dest = getattr(job, "dest", None)
        out: dict[str, GenerateResult | ModelError] = {}
        if dest is not None and getattr(dest, "inlined_responses", None):
            for item in dest.inlined_responses:
                key = str((getattr(item, "metadata", None) or {}).get("key", ""))
                if item.response is not None:
                    try:
                        text, tokens_in, tokens_out, model = parse_generate_response(self.iface.name, item.response)
                        out[key] = self.iface.result(text, tokens_in, tokens_out, model, batch=True)
                    except ModelError as exc:
                        out[key] = exc
                else:
                    out[key] = TransientModelError(f"gemini batch: request failed: {getattr(item.error, 'message', '')}")
            return out
        file_name = getattr(dest, "file_name", None) if dest is not None else None
        if not file_name:
            return out
        data = await self._call(aio.files.download(file=file_name))
        for line in load_jsonl(data):
            out[str(line.get("key"))] = self._parse_line(line)
        return out

    async def cancel(self, job_id: str) -> None:
        await self._call(self.iface.client().aio.batches.cancel(name=job_id))


class VertexBatchRunner(GeminiBatchRunner):
    interface_name = "vertex"
    max_requests_per_job = 200_000
    interface_class = VertexInterface

    @property
    def gcs_prefix(self) -> tuple[str, str]:
        uri = self.iface.setting("batch_gcs_uri") or self.iface.setting("batch_bucket")
        if not uri:
            raise FatalModelError("vertex batch: no Cloud Storage location; set batch_gcs_uri: gs://bucket/prefix in the "
                                  "model's parameters or the vertex block of keys.yaml")
        uri = str(uri)
        if not uri.startswith("gs://"):
            uri = f"gs://{uri}"
        bucket, _, prefix = uri[5:].partition("/")
        return bucket, prefix.strip("/")

    @property
    def storage_url(self) -> str:
        return str(self.iface.setting("storage_base_url", default="https://storage.googleapis.com")).rstrip("/")

    async def _token(self) -> str:
        assert isinstance(self.iface, VertexInterface)
        creds = self.iface.google_credentials()
        if creds is None:
            import google.auth

            creds, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
        if not creds.valid:
            import google.auth.transport.requests

            await asyncio.to_thread(creds.refresh, google.auth.transport.requests.Request())
        return str(creds.token)

    async def _gcs(self, method: str, path: str, *, data: bytes | None = None, params: dict[str, str] | None = None) -> bytes:
        import aiohttp

        headers = {"Authorization": f"Bearer {await self._token()}"}
        try:
            async with aiohttp.ClientSession() as session, session.request(
                method, f"{self.storage_url}{path}", data=data, params=params, headers=headers
            ) as resp:
                body = await resp.read()
                if resp.status >= 400:
                    raise _errors.from_status("vertex batch (Cloud Storage)", resp.status, body, resp.headers)
                return body
        except aiohttp.ClientError as exc:
            raise TransientModelError(f"vertex batch (Cloud Storage): {type(exc).__name__}") from None

    def _lines(self, requests: Sequence[tuple[str, GenerateRequest]]) -> bytes:
        lines = []
        for cid, req in requests:
            body = rest_request(req)
            body["labels"] = {"coeval_id": cid.lower()}
            lines.append({"key": cid, "request": body})
        return dump_jsonl(lines)

    async def submit(self, requests: Sequence[tuple[str, GenerateRequest]]) -> str:
        bucket, prefix = self.gcs_prefix
        run = f"{prefix}/coeval-{uuid.uuid4().hex[:12]}" if prefix else f"coeval-{uuid.uuid4().hex[:12]}"
        await self._gcs("POST", f"/upload/storage/v1/b/{bucket}/o", data=self._lines(requests),
                        params={"uploadType": "media", "name": f"{run}/input.jsonl"})
        job = await self._call(self.iface.client().aio.batches.create(
            model=self.iface.model_id, src=f"gs://{bucket}/{run}/input.jsonl",
            config={"dest": f"gs://{bucket}/{run}/output", "display_name": f"coeval-{self.model.name}"[:120]},
        ))
        return str(job.name)

    async def collect(self, job_id: str) -> Mapping[str, GenerateResult | ModelError]:
        job = await self._call(self.iface.client().aio.batches.get(name=job_id))
        dest = str(getattr(getattr(job, "dest", None), "gcs_uri", "") or "")
        if not dest.startswith("gs://"):
            return {}
        bucket, _, prefix = dest[5:].partition("/")
        listing = json.loads(await self._gcs("GET", f"/storage/v1/b/{bucket}/o", params={"prefix": prefix.rstrip("/") + "/"}))
        out: dict[str, GenerateResult | ModelError] = {}
        for obj in listing.get("items", []):
            name = str(obj.get("name", ""))
            if not name.rsplit("/", 1)[-1].startswith("predictions") or not name.endswith(".jsonl"):
                continue
            data = await self._gcs("GET", f"/storage/v1/b/{bucket}/o/{quote(name, safe='')}", params={"alt": "media"})
            for line in load_jsonl(data):
                key = line.get("key") or ((line.get("request") or {}).get("labels") or {}).get("coeval_id")
                if key is None:
                    continue
                status = line.get("status")
                if not line.get("response") and status:
                    out[str(key)] = TransientModelError(f"vertex batch: request failed: {str(status)[:300]}")
                else:
                    out[str(key)] = self._parse_line(line)
        return out
