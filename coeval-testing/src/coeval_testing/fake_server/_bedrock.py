"""AWS Bedrock routes: Converse, InvokeModel, model invocation (batch) jobs over the mini S3, and
the foundation-model list. Model ids arrive percent-encoded (``anthropic.claude-3-haiku-...%3A0``)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any
from urllib.parse import unquote

from aiohttp import web

from coeval_testing.fake_server import _anthropic, _batch
from coeval_testing.fake_server._core import STATE, Call, Reply, count_tokens, handle_model_call, make_reply
from coeval_testing.fake_server._state import BatchJob
from coeval_testing.fake_server._storage import s3_split
from coeval_testing.fake_server._strict import bedrock_job_problem

__all__ = ["add_routes"]

_ERRORS = {400: "ValidationException", 401: "UnrecognizedClientException", 403: "AccessDeniedException",
           404: "ResourceNotFoundException", 408: "ModelTimeoutException", 429: "ThrottlingException",
           500: "InternalServerException", 502: "ServiceUnavailableException", 503: "ServiceUnavailableException",
           529: "ServiceUnavailableException"}
_STATUS = {"pending": "Submitted", "running": "InProgress", "completed": "Completed", "expired": "Expired",
           "failed": "Failed", "cancelled": "Stopped"}


def bedrock_error(status: int, code: str, message: str, headers: dict[str, str]) -> web.Response:
    name = _ERRORS.get(status, "InternalServerException")
    if status == 401:
        status = 403  # Bedrock answers bad credentials with 403 UnrecognizedClientException
    headers = {**headers, "x-amzn-ErrorType": f"{name}:http://internal.amazon.com/coral/com.amazon.bedrock/"}
    if "Retry-After" in headers:
        headers["x-amz-retry-after"] = str(int(float(headers["Retry-After"]) * 1000))
    return web.json_response({"message": message}, status=status, headers=headers)


def _model_id(request: web.Request) -> str:
    raw = request.raw_path.split("?", 1)[0]
    return unquote(raw.split("/model/", 1)[1].rsplit("/", 1)[0])


def _forced_tool(body: dict[str, Any]) -> dict[str, Any] | None:
    config = body.get("toolConfig") or {}
    choice = config.get("toolChoice") or {}
    name = (choice.get("tool") or {}).get("name")
    for tool in config.get("tools") or []:
        spec = tool.get("toolSpec") or {}
        if (name and spec.get("name") == name) or (not name and "any" in choice):
            return spec
    return None


def converse_call(body: dict[str, Any], model: str) -> Call:
    texts = [str(b.get("text", "")) for b in body.get("system") or []]
    texts += [str(b.get("text", "")) for m in body.get("messages", []) for b in m.get("content", []) if "text" in b]
    tool = _forced_tool(body)
    schema = ((tool.get("inputSchema") or {}).get("json")) if tool else None
    max_tokens = (body.get("inferenceConfig") or {}).get("maxTokens")
    return Call(route="bedrock.converse", model=model, prompt=" ".join(t for t in texts if t), max_tokens=max_tokens, schema=schema)


def converse_body(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    tool = _forced_tool(body)
    if tool is not None:
        content: list[dict[str, Any]] = [{"toolUse": {"toolUseId": "tooluse_fake", "name": tool["name"], "input": json.loads(reply.text)}}]
        stop = "tool_use"
    else:
        content = [{"text": reply.text}]
        stop = "max_tokens" if reply.finish == "length" else "end_turn"
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": {"inputTokens": reply.input_tokens, "outputTokens": reply.output_tokens,
                  "totalTokens": reply.input_tokens + reply.output_tokens},
        "metrics": {"latencyMs": 1},
    }


async def converse(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    call = converse_call(body, _model_id(request))
    return await handle_model_call(request, call, lambda r: web.json_response(converse_body(body, r)), bedrock_error)


def invoke_output(model_input: dict[str, Any], model: str) -> dict[str, Any]:
    """The model-native InvokeModel reply for the three request families the batch runner writes."""
    if "anthropic_version" in model_input:
        call = _anthropic.messages_call({**model_input, "model": model})
        return _anthropic.message_body(model_input, call, make_reply(call))
    if "messages" in model_input:  # Amazon Nova
        texts = [str(b.get("text", "")) for b in model_input.get("system") or []]
        texts += [str(b.get("text", "")) for m in model_input["messages"] for b in m.get("content", [])]
        call = Call(route="bedrock.invoke", model=model, prompt=" ".join(texts),
                    max_tokens=(model_input.get("inferenceConfig") or {}).get("maxTokens"))
        reply = make_reply(call)
        return {"output": {"message": {"role": "assistant", "content": [{"text": reply.text}]}}, "stopReason": "end_turn",
                "usage": {"inputTokens": reply.input_tokens, "outputTokens": reply.output_tokens}}
    call = Call(route="bedrock.invoke", model=model, prompt=str(model_input.get("prompt", "")), max_tokens=model_input.get("max_gen_len"))
    reply = make_reply(call)
    return {"generation": reply.text, "prompt_token_count": count_tokens(call.prompt),
            "generation_token_count": reply.output_tokens, "stop_reason": "stop"}


async def invoke(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    model = _model_id(request)
    call = Call(route="bedrock.invoke", model=model, prompt=json.dumps(body))
    return await handle_model_call(request, call, lambda r: web.json_response(invoke_output(body, model)), bedrock_error)


# ---- model invocation jobs -------------------------------------------------------------------------
def _iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _job_object(job: BatchJob) -> dict[str, Any]:
    out = {
        "jobArn": job.extra["arn"],
        "jobName": job.extra["name"],
        "modelId": job.model,
        "roleArn": job.extra["role"],
        "status": _STATUS[job.state],
        "submitTime": _iso(job.created_at),
        "lastModifiedTime": _iso(job.created_at),
        "inputDataConfig": job.extra["input"],
        "outputDataConfig": job.extra["output"],
        "timeoutDurationInHours": 24,
    }
    if job.state in _batch.TERMINAL:
        out["endTime"] = _iso(job.created_at + 1)
    if job.state == "failed":
        out["message"] = "The job failed validation"
    return out


async def create_job(request: web.Request) -> web.Response:
    state = request.app[STATE]
    body = await request.json()
    state.record("bedrock.jobs.create", {"method": "POST", "path": request.path})
    in_uri = body["inputDataConfig"]["s3InputDataConfig"]["s3Uri"]
    bucket, key = s3_split(in_uri)
    keys = [key] if (bucket, key) in state.objects else sorted(k for (b, k) in state.objects if b == bucket and k.startswith(key))
    if not keys:
        return bedrock_error(400, "validation", f"no input found at {in_uri}", {})
    records = [json.loads(line) for k in keys for line in state.objects[(bucket, k)].decode().splitlines() if line.strip()]
    if (problem := bedrock_job_problem(body, records)) is not None:
        return bedrock_error(*problem, {})
    requests = [(str(rec["recordId"]), rec["modelInput"]) for rec in records]
    job = _batch.new_job(state, "job", "bedrock", body["modelId"], requests, name=body.get("jobName"), role=body.get("roleArn"),
                         input=body["inputDataConfig"], output=body["outputDataConfig"], input_keys=keys, input_bucket=bucket)
    job.extra["arn"] = f"arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/{job.id}"
    return web.json_response({"jobArn": job.extra["arn"]})


def _job_from_path(request: web.Request) -> BatchJob | None:
    raw = request.raw_path.split("?", 1)[0]
    ident = unquote(raw.split("/model-invocation-job/", 1)[1]).removesuffix("/stop")
    return request.app[STATE].jobs.get(ident.rsplit("/", 1)[-1])


def _write_outputs(request: web.Request, job: BatchJob) -> None:
    if job.extra.get("written") or job.state not in ("completed", "expired"):
        return
    job.extra["written"] = True
    state = request.app[STATE]
    out_bucket, out_prefix = s3_split(job.extra["output"]["s3OutputDataConfig"]["s3Uri"])
    out_prefix = out_prefix.rstrip("/")
    lines, ok, failed, tokens_in, tokens_out = [], 0, 0, 0, 0
    for custom_id, model_input in job.requests:
        kind, payload = job.results[custom_id]
        if kind == "ok":
            ok += 1
            lines.append({"recordId": custom_id, "modelInput": model_input, "modelOutput": payload})
        elif kind == "error":
            failed += 1
            lines.append({"recordId": custom_id, "modelInput": model_input, "error": {"errorCode": payload["status"], "errorMessage": payload["message"]}})
    name = job.extra["input_keys"][0].rsplit("/", 1)[-1]
    base = f"{out_prefix}/{job.id}" if out_prefix else job.id
    state.objects[(out_bucket, f"{base}/{name}.out")] = _batch.jsonl(lines)
    manifest = {"totalRecordCount": len(job.requests), "processedRecordCount": ok + failed, "successRecordCount": ok,
                "errorRecordCount": failed, "inputTokenCount": tokens_in, "outputTokenCount": tokens_out}
    state.objects[(out_bucket, f"{base}/manifest.json.out")] = json.dumps(manifest).encode()


async def get_job(request: web.Request) -> web.Response:
    state = request.app[STATE]
    job = _job_from_path(request)
    state.record("bedrock.jobs.get", {"method": request.method, "path": request.path})
    if job is None:
        return bedrock_error(404, "not_found", "job not found", {})
    if request.method == "POST":  # .../stop
        _batch.cancel(job)
        return web.json_response({})

    def respond(model_input: dict[str, Any]) -> dict[str, Any]:
        return invoke_output(model_input, job.model or "")

    _batch.advance(job, respond)
    _write_outputs(request, job)
    return web.json_response(_job_object(job))


async def foundation_models(request: web.Request) -> web.Response:
    summaries = [
        {"modelArn": f"arn:aws:bedrock:us-east-1::foundation-model/{m}", "modelId": m, "modelName": m, "providerName": p,
         "inputModalities": ["TEXT"], "outputModalities": ["TEXT"], "responseStreamingSupported": True,
         "inferenceTypesSupported": ["ON_DEMAND"]}
        for m, p in (("anthropic.claude-3-haiku-20240307-v1:0", "Anthropic"), ("amazon.nova-lite-v1:0", "Amazon"),
                     ("meta.llama3-8b-instruct-v1:0", "Meta"))
    ]
    return web.json_response({"modelSummaries": summaries})


def add_routes(app: web.Application) -> None:
    r = app.router
    r.add_post("/model/{model:.+}/converse", converse)
    r.add_post("/model/{model:.+}/invoke", invoke)
    r.add_post("/model-invocation-job", create_job)
    r.add_route("*", "/model-invocation-job/{job:.+}", get_job)
    r.add_get("/foundation-models", foundation_models)
