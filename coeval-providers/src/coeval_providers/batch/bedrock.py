"""Bedrock batch inference (model invocation jobs): the requests go to S3 as JSONL
(``{"recordId", "modelInput"}``), ``CreateModelInvocationJob`` runs them with a service role,
and the outputs land under ``{output}/{job id}/{input file}.out``.

Needs ``batch_s3_uri`` (``s3://bucket/prefix``) and ``batch_role_arn`` (a role Bedrock can
assume to read and write there), in the model's parameters or the ``bedrock`` block of the key
file. ``modelInput`` is the model's native InvokeModel body, so three families are supported:
Anthropic Claude (``anthropic.*``), Amazon Nova (``amazon.nova*``) and Meta Llama
(``meta.llama*``). Bedrock needs at least 100 records per job; the executor runs smaller
groups in real time.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from coeval.interfaces.base import FatalModelError, GenerateRequest, GenerateResult, ModelError
from coeval.scheduler.batching.base import BatchJobStatus

from coeval_providers import _errors
from coeval_providers.batch._common import ProviderBatchRunner, dump_jsonl, line_error, load_jsonl
from coeval_providers.interfaces._base import max_tokens_of, system_of
from coeval_providers.interfaces.anthropic import message_params, parse_message
from coeval_providers.interfaces.bedrock import BedrockInterface

__all__ = ["BedrockBatchRunner", "model_input", "parse_model_output"]

_STATES = {"Submitted": "pending", "Validating": "pending", "Scheduled": "pending", "InProgress": "running",
           "Stopping": "running", "Completed": "completed", "PartiallyCompleted": "completed", "Failed": "failed",
           "Stopped": "cancelled", "Expired": "expired"}


def _family(model_id: str) -> str:
    base = model_id.split(".", 1)[1] if model_id.split(".", 1)[0] in ("us", "eu", "apac", "global") else model_id
    for prefix, family in (("anthropic.", "anthropic"), ("amazon.nova", "nova"), ("meta.llama", "llama")):
        if base.startswith(prefix):
            return family
    return "unsupported"


def model_input(model_id: str, request: GenerateRequest) -> dict[str, Any]:
    """The InvokeModel body of one request for the model's family."""
    family = _family(model_id)
    params = request.params
    if family == "anthropic":
        claude = message_params(model_id, request, sampling=True)
        claude.pop("model", None)
        return {"anthropic_version": "bedrock-2023-05-31", **claude}
    if family == "nova":
        body: dict[str, Any] = {"schemaVersion": "messages-v1",
                                "messages": [{"role": "user", "content": [{"text": request.prompt}]}]}
        system = system_of(request)
        if request.json_schema is not None:
            hint = "Reply with only a JSON object that follows this JSON Schema:\n" + json.dumps(request.json_schema)
            system = f"{system}\n\n{hint}" if system else hint
        if system:
            body["system"] = [{"text": system}]
        inference = {k2: params[k] for k, k2 in (("temperature", "temperature"), ("top_p", "topP")) if params.get(k) is not None}
        cap = max_tokens_of(params)
        if cap is not None:
            inference["maxTokens"] = cap
        if inference:
            body["inferenceConfig"] = inference
        return body
    if family == "llama":
        system = system_of(request) or ""
        if request.json_schema is not None:
            system += "\n\nReply with only a JSON object that follows this JSON Schema:\n" + json.dumps(request.json_schema)
        prompt = "<|begin_of_text|>"
        if system.strip():
            prompt += f"<|start_header_id|>system<|end_header_id|>\n\n{system.strip()}<|eot_id|>"
        prompt += (f"<|start_header_id|>user<|end_header_id|>\n\n{request.prompt}<|eot_id|>"
                   "<|start_header_id|>assistant<|end_header_id|>\n\n")
        llama: dict[str, Any] = {"prompt": prompt}
        cap = max_tokens_of(params)
        if cap is not None:
            llama["max_gen_len"] = cap
        for k in ("temperature", "top_p"):
            if params.get(k) is not None:
                llama[k] = params[k]
        return llama
    raise FatalModelError(f"bedrock batch: model {model_id!r} is not of a supported family (anthropic.*, amazon.nova*, "
                          "meta.llama*); set batch_enabled: false for it to run in real time")


def parse_model_output(model_id: str, output: Any) -> tuple[str, int, int]:
    family = _family(model_id)
    if family == "anthropic":
        text, tokens_in, tokens_out, _ = parse_message("bedrock", output)
        return text, tokens_in, tokens_out
    if not isinstance(output, Mapping):
        raise _errors.malformed("bedrock", "model output is not an object")
    if family == "nova":
        content = ((output.get("output") or {}).get("message") or {}).get("content") or []
        text = "".join(str(b.get("text", "")) for b in content if isinstance(b, Mapping))
        usage = output.get("usage") or {}
        tokens_in, tokens_out = int(usage.get("inputTokens") or 0), int(usage.get("outputTokens") or 0)
    else:
        text = str(output.get("generation") or "")
        tokens_in, tokens_out = int(output.get("prompt_token_count") or 0), int(output.get("generation_token_count") or 0)
    if not text:
        raise _errors.malformed("bedrock", "empty reply")
    return text, tokens_in, tokens_out


class BedrockBatchRunner(ProviderBatchRunner[BedrockInterface]):
    interface_name = "bedrock"
    interface_class = BedrockInterface
    max_requests_per_job = 50_000
    #: Bedrock rejects jobs with fewer records.
    min_requests_per_job = 100
    poll_interval_s = 60.0

    async def _boto(self, fn: Any, **kwargs: Any) -> Any:
        """One blocking boto3 call, run in the interface's thread pool."""
        return await self._call(self.iface.run_sync(fn, **kwargs))

    def _location(self) -> tuple[str, str, str]:
        uri = self.iface.setting("batch_s3_uri")
        role = self.iface.setting("batch_role_arn")
        if not uri or not role:
            raise FatalModelError("bedrock batch: set batch_s3_uri (s3://bucket/prefix) and batch_role_arn in the model's "
                                  "parameters or the bedrock block of keys.yaml")
        bucket, _, prefix = str(uri).removeprefix("s3://").partition("/")
        return bucket, prefix.strip("/"), str(role)

    async def submit(self, requests: Sequence[tuple[str, GenerateRequest]]) -> str:
        bucket, prefix, role = self._location()
        name = f"coeval-{uuid.uuid4().hex[:16]}"
        base = f"{prefix}/{name}" if prefix else name
        data = dump_jsonl({"recordId": cid, "modelInput": model_input(self.iface.model_id, req)} for cid, req in requests)
        s3 = self.iface.boto_client("s3")
        await self._boto(s3.put_object, Bucket=bucket, Key=f"{base}/input.jsonl", Body=data)
        job = await self._boto(
            self.iface.boto_client("bedrock").create_model_invocation_job,
            jobName=name, roleArn=role, modelId=self.iface.model_id,
            inputDataConfig={"s3InputDataConfig": {"s3Uri": f"s3://{bucket}/{base}/input.jsonl", "s3InputFormat": "JSONL"}},
            outputDataConfig={"s3OutputDataConfig": {"s3Uri": f"s3://{bucket}/{base}/output/"}},
        )
        return str(job["jobArn"])

    async def poll(self, job_id: str) -> BatchJobStatus:
        job = await self._boto(self.iface.boto_client("bedrock").get_model_invocation_job, jobIdentifier=job_id)
        return BatchJobStatus(job_id=job_id, state=_STATES.get(str(job.get("status")), "running"),  # type: ignore[arg-type]
                              message=str(job.get("message") or "")[:500])

    async def collect(self, job_id: str) -> Mapping[str, GenerateResult | ModelError]:
        job = await self._boto(self.iface.boto_client("bedrock").get_model_invocation_job, jobIdentifier=job_id)
        out_uri = str(job["outputDataConfig"]["s3OutputDataConfig"]["s3Uri"])
        bucket, _, prefix = out_uri.removeprefix("s3://").partition("/")
        job_key = job_id.rsplit("/", 1)[-1]
        prefix = f"{prefix.rstrip('/')}/{job_key}/" if prefix.strip("/") else f"{job_key}/"
        s3 = self.iface.boto_client("s3")
        listing = await self._boto(s3.list_objects_v2, Bucket=bucket, Prefix=prefix)
        out: dict[str, GenerateResult | ModelError] = {}
        for obj in listing.get("Contents", []):
            key = str(obj["Key"])
            if not key.endswith(".out") or key.endswith("manifest.json.out"):
                continue
            body = await self._boto(s3.get_object, Bucket=bucket, Key=key)
            data = await self.iface.run_sync(body["Body"].read)
            for line in load_jsonl(data):
                record_id = str(line.get("recordId"))
                if line.get("error"):
                    err = line["error"]
                    out[record_id] = line_error("bedrock", int(err.get("errorCode") or 0) or None,
                                                {"message": err.get("errorMessage", "")})
                    continue
                try:
                    text, tokens_in, tokens_out = parse_model_output(self.iface.model_id, line.get("modelOutput"))
                    out[record_id] = self.iface.result(text, tokens_in, tokens_out, batch=True)
                except ModelError as exc:
                    out[record_id] = exc
        return out

    async def cancel(self, job_id: str) -> None:
        await self._boto(self.iface.boto_client("bedrock").stop_model_invocation_job, jobIdentifier=job_id)
