"""Gemini Developer API and Vertex AI routes: generateContent, Gemini batch mode (inline and
file input, resumable file upload, download), Vertex batch prediction jobs over Cloud Storage."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from aiohttp import web

from coeval_testing.fake_server import _batch, _openai
from coeval_testing.fake_server._core import STATE, Call, Reply, handle_model_call, make_reply
from coeval_testing.fake_server._state import BatchJob
from coeval_testing.fake_server._storage import gcs_split
from coeval_testing.fake_server._strict import (
    GEMINI_INLINE_BATCH_MAX_BYTES,
    auth_problem,
    gemini_body_problem,
    vertex_job_problem,
)

__all__ = ["add_routes", "gemini_error", "list_models"]

_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
           429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 502: "UNAVAILABLE", 529: "UNAVAILABLE"}
VERSIONS = "v1|v1beta|v1alpha|v1beta1"


def gemini_error(status: int, code: str, message: str, headers: dict[str, str]) -> web.Response:
    body = {"error": {"code": status, "message": message, "status": _STATUS.get(status, "UNKNOWN")}}
    return web.json_response(body, status=status, headers=headers)


def _lower_types(schema: Any) -> Any:
    """``responseSchema`` uses OpenAPI upper-case type names; JSON Schema wants lower case."""
    if isinstance(schema, dict):
        return {k: (v.lower() if k == "type" and isinstance(v, str) else _lower_types(v)) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_lower_types(v) for v in schema]
    return schema


def generate_call(body: dict[str, Any], model: str, route: str = "gemini.generate") -> Call:
    texts = [str(p.get("text", "")) for c in body.get("contents", []) for p in c.get("parts", [])]
    system = body.get("systemInstruction") or body.get("system_instruction") or {}
    texts = [str(p.get("text", "")) for p in system.get("parts", [])] + texts
    gen = body.get("generationConfig") or body.get("generation_config") or {}
    schema = gen.get("responseJsonSchema") or gen.get("responseSchema")
    if schema is None and gen.get("responseMimeType") == "application/json":
        schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    return Call(route=route, model=model, prompt=" ".join(t for t in texts if t),
                max_tokens=gen.get("maxOutputTokens"), schema=_lower_types(schema) if schema else None)


def generate_body(call: Call, reply: Reply) -> dict[str, Any]:
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": reply.text}]},
                "finishReason": "MAX_TOKENS" if reply.finish == "length" else "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": reply.input_tokens,
            "candidatesTokenCount": reply.output_tokens,
            "totalTokenCount": reply.input_tokens + reply.output_tokens,
        },
        "modelVersion": call.model,
        "responseId": "fake-response",
    }


def _respond_for(model: str) -> Any:
    def respond(body: dict[str, Any]) -> dict[str, Any]:
        call = generate_call(body, model)
        return generate_body(call, make_reply(call))

    return respond


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.000000Z")


# ---- Developer API: models/{m}:action ------------------------------------------------------------
async def models_post(request: web.Request) -> web.StreamResponse:
    rest = request.match_info["rest"]
    model, _, action = rest.rpartition(":")
    model = model.removeprefix("models/")
    body = await request.json()
    if action == "generateContent":
        if (problem := gemini_body_problem(body)) is not None:
            return gemini_error(*problem, {})
        call = generate_call(body, model)
        return await handle_model_call(request, call, lambda r: web.json_response(generate_body(call, r)), gemini_error)
    if action == "batchGenerateContent":
        return await _create_gemini_batch(request, model, body)
    if action == "countTokens":
        call = generate_call(body, model)
        return web.json_response({"totalTokens": len(call.prompt.split())})
    return gemini_error(404, "not_found", f"unknown action {action}", {})


async def vertex_models_post(request: web.Request) -> web.StreamResponse:
    rest = request.match_info["rest"]
    model, _, action = rest.rpartition(":")
    body = await request.json()
    if action != "generateContent":
        return gemini_error(404, "not_found", f"unknown action {action}", {})
    if (problem := gemini_body_problem(body)) is not None:
        return gemini_error(*problem, {})
    call = generate_call(body, model, route="vertex.generate")
    return await handle_model_call(request, call, lambda r: web.json_response(generate_body(call, r)), gemini_error)


# ---- Developer API batches -----------------------------------------------------------------------
_GEMINI_STATE = {"pending": "BATCH_STATE_PENDING", "running": "BATCH_STATE_RUNNING", "completed": "BATCH_STATE_SUCCEEDED",
                 "expired": "BATCH_STATE_EXPIRED", "failed": "BATCH_STATE_FAILED", "cancelled": "BATCH_STATE_CANCELLED"}


def _gemini_batch(request: web.Request, job: BatchJob) -> dict[str, Any]:
    c = _batch.counts(job)
    meta: dict[str, Any] = {
        "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatch",
        "name": f"batches/{job.id}",
        "model": f"models/{job.model}",
        "displayName": job.extra.get("display_name") or job.id,
        "state": _GEMINI_STATE[job.state],
        "createTime": job.extra["create_time"],
        "updateTime": _now(),
        "batchStats": {
            "requestCount": str(c["total"]),
            "successfulRequestCount": str(c["ok"]),
            "failedRequestCount": str(c["failed"]),
            "pendingRequestCount": str(c["total"] - c["ok"] - c["failed"]),
        },
    }
    if job.state in ("completed", "expired") and job.results:
        if job.extra.get("inline"):
            items = []
            for custom_id, _ in job.requests:
                kind, payload = job.results[custom_id]
                if kind == "ok":
                    items.append({"response": payload, "metadata": {"key": custom_id}})
                elif kind == "error":
                    items.append({"error": {"code": payload["status"], "message": payload["message"]}, "metadata": {"key": custom_id}})
            meta["output"] = {"inlinedResponses": {"inlinedResponses": items}}
        else:
            meta["output"] = {"responsesFile": _output_file(request, job)}
    return {"name": f"batches/{job.id}", "metadata": meta, "done": job.state in _batch.TERMINAL}


def _output_file(request: web.Request, job: BatchJob) -> str:
    state = request.app[STATE]
    if "output_file" not in job.extra:
        lines = []
        for custom_id, _ in job.requests:
            kind, payload = job.results[custom_id]
            if kind == "ok":
                lines.append({"key": custom_id, "response": payload})
            elif kind == "error":
                lines.append({"key": custom_id, "error": {"code": payload["status"], "message": payload["message"], "status": "INTERNAL"}})
        file_id = state.new_id("out")
        state.files[f"files/{file_id}"] = {"content": _batch.jsonl(lines),
                                          "filename": f"{job.id}.jsonl", "purpose": "batch_output", "created_at": 0}
        job.extra["output_file"] = f"files/{file_id}"
    return str(job.extra["output_file"])


async def _create_gemini_batch(request: web.Request, model: str, body: dict[str, Any]) -> web.Response:
    state = request.app[STATE]
    state.record("gemini.batches.create", {"method": "POST", "path": request.path})
    if (problem := auth_problem("gemini.batches", request)) is not None:
        return gemini_error(*problem, {})
    batch = body.get("batch") or {}
    source = batch.get("inputConfig") or batch.get("input_config") or {}
    requests: list[tuple[str, dict[str, Any]]] = []
    inline = "requests" in source
    if inline:
        for i, item in enumerate(source["requests"].get("requests", [])):
            key = (item.get("metadata") or {}).get("key") or str(i)
            requests.append((key, item["request"]))
    else:
        name = str(source.get("fileName") or source.get("file_name") or "")
        f = state.files.get(name)
        if f is None:
            return gemini_error(400, "not_found", f"input file {name} not found", {})
        for line in f["content"].decode().splitlines():
            if line.strip():
                item = json.loads(line)
                requests.append((str(item["key"]), item["request"]))
    if inline and len(await request.read()) > GEMINI_INLINE_BATCH_MAX_BYTES:
        return gemini_error(400, "invalid_argument", f"inline batch requests exceed {GEMINI_INLINE_BATCH_MAX_BYTES} bytes", {})
    for key, item in requests:
        if (problem := gemini_body_problem(item)) is not None:
            return gemini_error(problem[0], problem[1], f"request {key}: {problem[2]}", {})
    job = _batch.new_job(state, "gb", "gemini", model, requests, inline=inline,
                         display_name=batch.get("displayName"), create_time=_now())
    return web.json_response(_gemini_batch(request, job))


async def get_batch(request: web.Request) -> web.Response:
    state = request.app[STATE]
    rest = request.match_info["rest"]
    job_id, _, action = rest.partition(":")
    job = state.jobs.get(job_id)
    if job is None or job.provider != "gemini":
        if job is not None and job.provider == "openai":  # same path shape as OpenAI's /v1/batches/{id}
            return await _openai.get_batch(request)
        return gemini_error(404, "not_found", f"batch {job_id} not found", {})
    if request.method == "POST" and action == "cancel":
        _batch.cancel(job)
        return web.json_response({})
    state.record("gemini.batches.get", {"method": "GET", "path": request.path})
    _batch.advance(job, _respond_for(job.model or ""))
    return web.json_response(_gemini_batch(request, job))


# ---- Developer API files -------------------------------------------------------------------------
async def upload_start(request: web.Request) -> web.Response:
    state = request.app[STATE]
    command = request.headers.get("X-Goog-Upload-Command", "")
    if "start" in command:
        meta = await request.json() if request.can_read_body else {}
        upload_id = state.new_id("up")
        state.files[f"pending/{upload_id}"] = {"meta": meta.get("file", {}), "content": b"", "created_at": 0,
                                              "filename": "", "purpose": "upload"}
        url = f"{request.url.origin()}{request.path}?upload_id={upload_id}"
        return web.Response(headers={"x-goog-upload-url": url, "x-goog-upload-status": "active"})
    upload_id = request.query.get("upload_id", "")
    pending = state.files.pop(f"pending/{upload_id}", None)
    if pending is None:
        return gemini_error(404, "not_found", "unknown upload", {})
    content = await request.read()
    name = f"files/{state.new_id('f')}"
    state.files[name] = {"content": content, "filename": pending["meta"].get("displayName", ""), "purpose": "upload", "created_at": 0}
    state.record("gemini.files.upload", {"method": "POST", "path": request.path, "bytes": len(content)})
    file_obj = {"name": name, "mimeType": pending["meta"].get("mimeType", "application/jsonl"), "sizeBytes": str(len(content)),
                "createTime": _now(), "state": "ACTIVE", "uri": f"{request.url.origin()}/v1beta/{name}", "source": "UPLOADED"}
    return web.json_response({"file": file_obj}, headers={"x-goog-upload-status": "final"})


async def files_get(request: web.Request) -> web.Response:
    state = request.app[STATE]
    rest = request.match_info["rest"]
    file_id, _, action = rest.partition(":")
    f = state.files.get(f"files/{file_id}")
    if f is None:
        if file_id in state.files:  # an OpenAI file id under /v1/files/{id}
            return await _openai.get_file(request)
        return gemini_error(404, "not_found", f"file {file_id} not found", {})
    if action == "download":
        state.record("gemini.files.download", {"method": "GET", "path": request.path})
        return web.Response(body=f["content"], content_type="application/octet-stream")
    return web.json_response({"name": f"files/{file_id}", "sizeBytes": str(len(f["content"])), "state": "ACTIVE"})


# ---- Vertex batch prediction jobs ----------------------------------------------------------------
_VERTEX_STATE = {"pending": "JOB_STATE_PENDING", "running": "JOB_STATE_RUNNING", "completed": "JOB_STATE_SUCCEEDED",
                 "expired": "JOB_STATE_EXPIRED", "failed": "JOB_STATE_FAILED", "cancelled": "JOB_STATE_CANCELLED"}


def _vertex_job(job: BatchJob) -> dict[str, Any]:
    c = _batch.counts(job)
    out: dict[str, Any] = {
        "name": job.extra["name"],
        "displayName": job.extra.get("display_name") or job.id,
        "model": job.extra["model_path"],
        "inputConfig": job.extra["input_config"],
        "outputConfig": job.extra["output_config"],
        "state": _VERTEX_STATE[job.state],
        "createTime": job.extra["create_time"],
        "updateTime": _now(),
    }
    if job.state in ("completed", "expired"):
        out["outputInfo"] = {"gcsOutputDirectory": job.extra["output_dir"]}
        out["completionStats"] = {"successfulCount": str(c["ok"]), "failedCount": str(c["failed"] + c["expired"])}
    if job.state == "failed":
        out["error"] = {"code": 3, "message": "The batch prediction job failed"}
    return out


async def create_vertex_job(request: web.Request) -> web.Response:
    state = request.app[STATE]
    body = await request.json()
    state.record("vertex.batches.create", {"method": "POST", "path": request.path})
    if (problem := auth_problem("vertex.batches", request) or vertex_job_problem(body)) is not None:
        return gemini_error(*problem, {})
    uris = ((body.get("inputConfig") or {}).get("gcsSource") or {}).get("uris") or []
    prefix = ((body.get("outputConfig") or {}).get("gcsDestination") or {}).get("outputUriPrefix")
    if not uris or not prefix:
        return gemini_error(400, "invalid", "inputConfig.gcsSource.uris and outputConfig.gcsDestination are required", {})
    requests: list[tuple[str, dict[str, Any]]] = []
    for uri in uris:
        data = state.objects.get(gcs_split(uri))
        if data is None:
            return gemini_error(400, "not_found", f"input {uri} not found", {})
        for i, line in enumerate(data.decode().splitlines()):
            if line.strip():
                item = json.loads(line)
                requests.append((str(item.get("key", i)), item["request"]))
    for key, item in requests:
        if (problem := gemini_body_problem(item)) is not None:
            return gemini_error(problem[0], problem[1], f"request {key}: {problem[2]}", {})
    model_path = str(body.get("model", ""))
    model = model_path.rsplit("/", 1)[-1]
    job = _batch.new_job(state, "", "vertex", model, requests, model_path=model_path,
                         input_config=body.get("inputConfig"), output_config=body.get("outputConfig"),
                         display_name=body.get("displayName"), create_time=_now())
    location = f"projects/{request.match_info['project']}/locations/{request.match_info['location']}"
    job.extra["name"] = f"{location}/batchPredictionJobs/{job.id}"
    job.extra["output_dir"] = f"{prefix.rstrip('/')}/prediction-model-{job.id}"
    return web.json_response(_vertex_job(job))


def _write_vertex_output(request: web.Request, job: BatchJob) -> None:
    if job.extra.get("written") or job.state not in ("completed", "expired"):
        return
    job.extra["written"] = True
    state = request.app[STATE]
    lines = []
    for custom_id, body in job.requests:
        kind, payload = job.results[custom_id]
        if kind == "ok":
            lines.append({"key": custom_id, "request": body, "response": payload, "status": ""})
        elif kind == "error":
            lines.append({"key": custom_id, "request": body, "status": f"Internal error: {payload['message']}"})
    bucket, key = gcs_split(job.extra["output_dir"] + "/predictions.jsonl")
    state.objects[(bucket, key)] = _batch.jsonl(lines)


async def vertex_job(request: web.Request) -> web.Response:
    state = request.app[STATE]
    rest = request.match_info["rest"]
    job_id, _, action = rest.partition(":")
    job = state.jobs.get(job_id)
    if job is None or job.provider != "vertex":
        return gemini_error(404, "not_found", f"job {job_id} not found", {})
    if request.method == "POST" and action == "cancel":
        _batch.cancel(job)
        return web.json_response({})
    state.record("vertex.batches.get", {"method": "GET", "path": request.path})
    _batch.advance(job, _respond_for(job.model or ""))
    _write_vertex_output(request, job)
    return web.json_response(_vertex_job(job))


def list_models(request: web.Request) -> web.Response:
    models = [
        {"name": f"models/{m}", "displayName": m, "inputTokenLimit": 1048576, "outputTokenLimit": 8192,
         "supportedGenerationMethods": ["generateContent", "countTokens", "batchGenerateContent"]}
        for m in ("gemini-2.0-flash", "gemini-2.5-flash", "gemini-2.5-pro")
    ]
    models.append({"name": "models/text-embedding-004", "displayName": "embedding", "supportedGenerationMethods": ["embedContent"]})
    return web.json_response({"models": models})


def add_routes(app: web.Application) -> None:
    r = app.router
    r.add_post(f"/{{ver:{VERSIONS}}}/models/{{rest:.+}}", models_post)
    r.add_post(f"/{{ver:{VERSIONS}}}/projects/{{project}}/locations/{{location}}/publishers/google/models/{{rest:.+}}", vertex_models_post)
    r.add_post(f"/{{ver:{VERSIONS}}}/publishers/google/models/{{rest:.+}}", vertex_models_post)
    r.add_post(f"/{{ver:{VERSIONS}}}/projects/{{project}}/locations/{{location}}/batchPredictionJobs", create_vertex_job)
    r.add_route("*", f"/{{ver:{VERSIONS}}}/projects/{{project}}/locations/{{location}}/batchPredictionJobs/{{rest}}", vertex_job)
    r.add_post(f"/upload/{{ver:{VERSIONS}}}/files", upload_start)
    r.add_get(f"/{{ver:{VERSIONS}}}/files/{{rest}}", files_get)
    r.add_route("*", f"/{{ver:{VERSIONS}}}/batches/{{rest}}", get_batch)
