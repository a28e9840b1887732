"""OpenAI-compatible routes: chat completions, models, files and batches (OpenAI, Azure OpenAI,
and every vendor that speaks the same API under its own path prefix), plus Mistral batch jobs.

Any path ending in ``chat/completions`` is a chat call, so ``/v1/...``, ``/openai/v1/...``
(Groq, Azure v1), ``/api/v1/...`` (OpenRouter), ``/compatibility/v1/...`` (Cohere),
``/v1/openai/...`` (DeepInfra) and ``/openai/deployments/{d}/...`` (Azure) all work.
"""

from __future__ import annotations

import json
import time
from typing import Any

from aiohttp import web

from coeval_testing.fake_server import _batch
from coeval_testing.fake_server._core import STATE, Call, Reply, handle_model_call, make_reply, message_text
from coeval_testing.fake_server._state import BatchJob, FakeState
from coeval_testing.fake_server._strict import (
    AZURE_BATCH_ENDPOINTS,
    BATCH_ENDPOINTS,
    BATCH_MAX_BYTES,
    azure_api_version_problem,
    batch_lines_problem,
    openai_chat_body_problem,
    openai_chat_path_problem,
)

#: ``purpose`` values of OpenAI's ``POST /v1/files`` (openapi spec enum).
FILE_PURPOSES = frozenset({"assistants", "batch", "fine-tune", "vision", "user_data", "evals"})

__all__ = ["FAKE_MODELS", "add_routes", "chat_call", "chat_response", "openai_error"]

FAKE_MODELS = ("gpt-4o-mini", "gpt-4o", "o3-mini", "fake-model")


def _match(request: web.Request, name: str) -> str:
    """Route variable ``name``, or ``rest`` when a Gemini route handed the request over."""
    return request.match_info.get(name) or request.match_info["rest"]


def openai_error(status: int, code: str, message: str, headers: dict[str, str]) -> web.Response:
    kind = {429: "rate_limit_error", 401: "authentication_error", 404: "not_found_error", 400: "invalid_request_error"}
    body = {"error": {"message": message, "type": kind.get(status, "server_error"), "param": None, "code": code}}
    return web.json_response(body, status=status, headers=headers)


def _schema_from_hint(body: dict[str, Any]) -> dict[str, Any] | None:
    """Providers with JSON mode only get the schema as text in the prompt; find it there."""
    for m in body.get("messages", []):
        text = message_text(m.get("content"))
        if "JSON Schema:" in text:
            try:
                found = json.loads(text.split("JSON Schema:", 1)[1].strip())
            except ValueError:
                continue
            if isinstance(found, dict):
                return found
    return None


#: Sampling keys of a chat-completions body the request log keeps.
_SAMPLING_LOGGED = ("temperature", "top_p", "seed")


def chat_call(body: dict[str, Any], route: str = "openai.chat", model: str | None = None) -> Call:
    prompt = " ".join(message_text(m.get("content")) for m in body.get("messages", []) if isinstance(m, dict))
    schema = None
    fmt = body.get("response_format")
    if isinstance(fmt, dict):
        if fmt.get("type") == "json_schema":
            schema = (fmt.get("json_schema") or {}).get("schema") or {"type": "object"}
        elif fmt.get("type") == "json_object":
            schema = _schema_from_hint(body) or {"type": "object", "properties": {"answer": {"type": "string"}}}
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
    sampling = {k: body[k] for k in _SAMPLING_LOGGED if k in body}
    return Call(route=route, model=model or body.get("model"), prompt=prompt, max_tokens=max_tokens, schema=schema,
                sampling=sampling)


def chat_response(call: Call, reply: Reply, rid: str = "chatcmpl-fake") -> dict[str, Any]:
    return {
        "id": rid,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": call.model or "fake-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.text, "refusal": None},
                "logprobs": None,
                "finish_reason": reply.finish,
            }
        ],
        "usage": {
            "prompt_tokens": reply.input_tokens,
            "completion_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.output_tokens,
        },
    }


async def chat_completions(request: web.Request) -> web.StreamResponse:
    problem = openai_chat_path_problem(request.path) or azure_api_version_problem(request)
    if problem is not None:
        request.app[STATE].record("openai.rejected", {"method": "POST", "path": request.path, "rejected": problem[1]})
        return openai_error(*problem, {})
    try:
        body = await request.json()
    except json.JSONDecodeError:
        return openai_error(400, "invalid_json", "We could not parse the JSON body of your request.", {})
    if "/openai/deployments/" in request.path and isinstance(body, dict):
        body.setdefault("model", request.path.split("/openai/deployments/", 1)[1].split("/", 1)[0])
    if (problem := openai_chat_body_problem(body)) is not None:
        request.app[STATE].record("openai.rejected", {"method": "POST", "path": request.path, "rejected": problem[2]})
        return openai_error(*problem, {})
    deployment = request.match_info.get("prefix", "")
    model = None
    if "deployments/" in deployment:
        model = deployment.split("deployments/", 1)[1].strip("/")
    call = chat_call(body, model=model)
    if not call.model:
        return openai_error(400, "missing_model", "you must provide a model parameter", {})
    return await handle_model_call(request, call, lambda r: web.json_response(chat_response(call, r)), openai_error)


async def list_models(request: web.Request) -> web.Response:
    state = request.app[STATE]
    state.record("openai.models", {"method": "GET", "path": request.path})
    if "rejected-" in request.headers.get("Authorization", "") + request.headers.get("api-key", ""):
        return openai_error(401, "invalid_api_key", "Incorrect API key provided", {})
    data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in FAKE_MODELS]
    return web.json_response({"object": "list", "data": data})


# ---- files -----------------------------------------------------------------------------------
def _file_object(state: FakeState, file_id: str) -> dict[str, Any]:
    f = state.files[file_id]
    return {
        "id": file_id,
        "object": "file",
        "bytes": len(f["content"]),
        "created_at": f["created_at"],
        "filename": f["filename"],
        "purpose": f["purpose"],
        "status": "processed",
        "status_details": None,
    }


def store_file(state: FakeState, content: bytes, filename: str, purpose: str) -> str:
    file_id = state.new_id("file-")
    state.files[file_id] = {"content": content, "filename": filename, "purpose": purpose, "created_at": int(time.time())}
    return file_id


async def create_file(request: web.Request) -> web.Response:
    state = request.app[STATE]
    form = await request.post()
    upload = form.get("file")
    if upload is None or not hasattr(upload, "file"):
        return openai_error(400, "missing_file", "a file is required", {})
    content = upload.file.read()
    purpose = str(form.get("purpose", ""))
    state.record("openai.files.create", {"method": "POST", "path": request.path, "bytes": len(content), "purpose": purpose})
    problem = azure_api_version_problem(request)
    if problem is not None:
        return openai_error(*problem, {})
    if purpose not in FILE_PURPOSES:
        return openai_error(400, "invalid_purpose", f"purpose: expected one of {sorted(FILE_PURPOSES)}, got {purpose!r}", {})
    if purpose == "batch" and len(content) > BATCH_MAX_BYTES:
        return openai_error(400, "file_too_large", f"a batch input file may be at most {BATCH_MAX_BYTES} bytes", {})
    file_id = store_file(state, content, getattr(upload, "filename", None) or "upload.jsonl", purpose)
    return web.json_response(_file_object(state, file_id))


async def get_file(request: web.Request) -> web.Response:
    state = request.app[STATE]
    file_id = _match(request, "file_id")
    if file_id not in state.files:
        return openai_error(404, "file_not_found", f"No such file: {file_id}", {})
    return web.json_response(_file_object(state, file_id))


async def file_content(request: web.Request) -> web.Response:
    state = request.app[STATE]
    file_id = _match(request, "file_id")
    state.record("openai.files.content", {"method": "GET", "path": request.path, "file": file_id})
    if file_id not in state.files:
        return openai_error(404, "file_not_found", f"No such file: {file_id}", {})
    return web.Response(body=state.files[file_id]["content"], content_type="application/octet-stream")


# ---- batches (OpenAI / Azure) ------------------------------------------------------------------
def _parse_jsonl(content: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in content.decode("utf-8").splitlines() if line.strip()]


def _respond(body: dict[str, Any]) -> dict[str, Any]:
    call = chat_call(body)
    return chat_response(call, make_reply(call))


def _finish_files(state: FakeState, job: BatchJob, mistral: bool = False) -> None:
    """Write output and error files once a job is terminal (OpenAI's batch output format)."""
    if job.extra.get("files_written") or job.state not in ("completed", "expired"):
        return
    job.extra["files_written"] = True
    out_lines, err_lines = [], []
    for custom_id, _ in job.requests:
        kind, payload = job.results[custom_id]
        rid = state.new_id("batch_req_")
        if kind == "ok":
            out_lines.append({"id": rid, "custom_id": custom_id, "response": {"status_code": 200, "request_id": rid, "body": payload}, "error": None})
        elif kind == "error":
            err_body = {"error": {"message": payload["message"], "type": "server_error", "param": None, "code": payload["code"]}}
            err_lines.append({"id": rid, "custom_id": custom_id, "response": {"status_code": payload["status"], "request_id": rid, "body": err_body}, "error": None})
        else:
            err_lines.append({"id": rid, "custom_id": custom_id, "response": None, "error": {"code": "batch_expired", "message": "This request could not be executed before the completion window expired."}})
    if out_lines:
        job.extra["output_file_id"] = store_file(state, _batch.jsonl(out_lines), f"{job.id}_output.jsonl", "batch_output")
    if err_lines:
        job.extra["error_file_id"] = store_file(state, _batch.jsonl(err_lines), f"{job.id}_error.jsonl", "batch_output")


_OPENAI_STATUS = {"pending": "validating", "running": "in_progress", "completed": "completed", "expired": "expired", "failed": "failed", "cancelled": "cancelled"}


def _batch_object(job: BatchJob) -> dict[str, Any]:
    c = _batch.counts(job)
    failed = c["failed"] + c["expired"]
    obj = {
        "id": job.id,
        "object": "batch",
        "endpoint": job.extra["endpoint"],
        "errors": None,
        "input_file_id": job.extra["input_file_id"],
        "completion_window": "24h",
        "status": _OPENAI_STATUS[job.state],
        "output_file_id": job.extra.get("output_file_id"),
        "error_file_id": job.extra.get("error_file_id"),
        "created_at": int(job.created_at),
        "request_counts": {"total": c["total"], "completed": c["ok"], "failed": failed},
        "metadata": job.extra.get("metadata"),
    }
    if job.state == "failed":
        obj["errors"] = {"object": "list", "data": [{"code": "invalid_request", "message": "The batch failed validation", "line": None, "param": None}]}
    return obj


async def create_batch(request: web.Request) -> web.Response:
    state = request.app[STATE]
    body = await request.json()
    endpoint = body.get("endpoint")
    state.record("openai.batches.create", {"method": "POST", "path": request.path, "endpoint": endpoint})
    problem = azure_api_version_problem(request)
    if problem is not None:
        return openai_error(*problem, {})
    endpoints = AZURE_BATCH_ENDPOINTS if request.path.startswith("/openai/batches") else BATCH_ENDPOINTS
    if endpoint not in endpoints:
        return openai_error(400, "invalid_value", f"endpoint: expected one of {sorted(endpoints)}, got {endpoint!r}", {})
    if body.get("completion_window") != "24h":  # the only value the API reference lists
        return openai_error(400, "invalid_value", f"completion_window: expected '24h', got {body.get('completion_window')!r}", {})
    file_id = body.get("input_file_id")
    if file_id not in state.files:
        return openai_error(400, "file_not_found", f"input file {file_id} not found", {})
    if state.files[file_id]["purpose"] != "batch":
        return openai_error(400, "invalid_file", f"input file {file_id} was not uploaded with purpose 'batch'", {})
    lines = _parse_jsonl(state.files[file_id]["content"])
    problem = batch_lines_problem(lines, str(endpoint))
    if problem is not None:
        return openai_error(*problem, {})
    if not str(endpoint).endswith("/chat/completions"):
        # The fake only answers chat completions; a chat body sent to another endpoint would be
        # refused line by line by the real service, so refuse the whole batch here.
        return openai_error(400, "invalid_body", f"the request bodies are chat completions, not {endpoint}", {})
    models = {line.get("body", {}).get("model") for line in lines}
    if len(models) > 1:
        return openai_error(400, "mixed_models", f"a batch may hold one model only, got {sorted(map(str, models))}", {})
    requests = [(line["custom_id"], line["body"]) for line in lines]
    job = _batch.new_job(state, "batch_", "openai", models.pop() if models else None, requests,
                         endpoint=body.get("endpoint"), input_file_id=file_id, metadata=body.get("metadata"))
    return web.json_response(_batch_object(job))


async def get_batch(request: web.Request) -> web.Response:
    state = request.app[STATE]
    job = state.jobs.get(_match(request, "batch_id"))
    state.record("openai.batches.retrieve", {"method": "GET", "path": request.path})
    if job is None:
        return openai_error(404, "batch_not_found", "No such batch", {})
    _batch.advance(job, _respond)
    _finish_files(state, job)
    return web.json_response(_batch_object(job))


async def cancel_batch(request: web.Request) -> web.Response:
    state = request.app[STATE]
    job = state.jobs.get(_match(request, "batch_id"))
    if job is None:
        return openai_error(404, "batch_not_found", "No such batch", {})
    _batch.cancel(job)
    return web.json_response(_batch_object(job))


# ---- Mistral batch jobs ----------------------------------------------------------------------
#: ``endpoint`` values of Mistral's ``POST /v1/batch/jobs`` (API reference, ApiEndpoint enum).
MISTRAL_BATCH_ENDPOINTS = frozenset({"/v1/chat/completions", "/v1/embeddings", "/v1/fim/completions", "/v1/moderations",
                                     "/v1/chat/moderations", "/v1/ocr", "/v1/classifications", "/v1/chat/classifications"})
_MISTRAL_STATUS = {"pending": "QUEUED", "running": "RUNNING", "completed": "SUCCESS", "expired": "TIMEOUT_EXCEEDED", "failed": "FAILED", "cancelled": "CANCELLED"}


def _mistral_job(job: BatchJob) -> dict[str, Any]:
    c = _batch.counts(job)
    return {
        "id": job.id,
        "object": "batch",
        "input_files": [job.extra["input_file_id"]],
        "endpoint": job.extra["endpoint"],
        "model": job.model,
        "metadata": job.extra.get("metadata"),
        "errors": [] if job.state != "failed" else [{"message": "The job failed", "count": 1}],
        "status": _MISTRAL_STATUS[job.state],
        "created_at": int(job.created_at),
        "total_requests": c["total"],
        "completed_requests": c["ok"] + c["failed"] + c["expired"],
        "succeeded_requests": c["ok"],
        "failed_requests": c["failed"] + c["expired"],
        "output_file": job.extra.get("output_file_id"),
        "error_file": job.extra.get("error_file_id"),
    }


async def create_mistral_job(request: web.Request) -> web.Response:
    state = request.app[STATE]
    body = await request.json()
    state.record("mistral.batch.create", {"method": "POST", "path": request.path, "endpoint": body.get("endpoint")})
    if body.get("endpoint") not in MISTRAL_BATCH_ENDPOINTS:
        return openai_error(400, "invalid_value", f"endpoint: expected one of {sorted(MISTRAL_BATCH_ENDPOINTS)}, got {body.get('endpoint')!r}", {})
    if not body.get("model"):  # the fake only serves chat lines, whose model comes from the job
        return openai_error(400, "missing_model", "model is required for chat completion batch jobs", {})
    files = body.get("input_files") or []
    if not files or any(f not in state.files for f in files):
        return openai_error(400, "file_not_found", "input file not found", {})
    requests: list[tuple[str, dict[str, Any]]] = []
    for file_id in files:
        for line in _parse_jsonl(state.files[file_id]["content"]):
            requests.append((str(line["custom_id"]), {**line["body"], "model": body.get("model")}))
    job = _batch.new_job(state, "mbatch-", "mistral", body.get("model"), requests,
                         endpoint=body.get("endpoint"), input_file_id=files[0], metadata=body.get("metadata"))
    return web.json_response(_mistral_job(job))


async def get_mistral_job(request: web.Request) -> web.Response:
    state = request.app[STATE]
    job = state.jobs.get(request.match_info["job_id"])
    state.record("mistral.batch.retrieve", {"method": "GET", "path": request.path})
    if job is None:
        return openai_error(404, "not_found", "No such job", {})
    _batch.advance(job, _respond)
    _finish_files(state, job)
    return web.json_response(_mistral_job(job))


async def cancel_mistral_job(request: web.Request) -> web.Response:
    state = request.app[STATE]
    job = state.jobs.get(request.match_info["job_id"])
    if job is None:
        return openai_error(404, "not_found", "No such job", {})
    _batch.cancel(job)
    return web.json_response(_mistral_job(job))


def add_routes(app: web.Application) -> None:
    r = app.router
    r.add_post(r"/{prefix:.*}chat/completions", chat_completions)
    r.add_post(r"/v1/batch/jobs", create_mistral_job)
    r.add_get(r"/v1/batch/jobs/{job_id}", get_mistral_job)
    r.add_post(r"/v1/batch/jobs/{job_id}/cancel", cancel_mistral_job)
    r.add_post(r"/{prefix:.*}files", create_file)
    r.add_get(r"/{prefix:.*}files/{file_id}/content", file_content)
    r.add_get(r"/{prefix:.*}files/{file_id}", get_file)
    r.add_post(r"/{prefix:.*}batches", create_batch)
    r.add_get(r"/{prefix:.*}batches/{batch_id}", get_batch)
    r.add_post(r"/{prefix:.*}batches/{batch_id}/cancel", cancel_batch)


openai_list_models = list_models
