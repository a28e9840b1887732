"""Anthropic routes: messages (text, forced tool use, JSON output format) and message batches."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from aiohttp import web

from coeval_testing.fake_server import _batch
from coeval_testing.fake_server._core import STATE, Call, Reply, handle_model_call, make_reply, message_text
from coeval_testing.fake_server._state import BatchJob
from coeval_testing.fake_server._strict import (
    anthropic_batch_problem,
    anthropic_body_problem,
    anthropic_headers_problem,
)

__all__ = ["add_routes", "anthropic_error", "list_models"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def anthropic_error(status: int, code: str, message: str, headers: dict[str, str]) -> web.Response:
    body = {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message}, "request_id": "req_fake"}
    return web.json_response(body, status=status, headers=headers)


def _forced_tool(body: dict[str, Any]) -> dict[str, Any] | None:
    choice = body.get("tool_choice") or {}
    if choice.get("type") != "tool":
        return None
    for tool in body.get("tools") or []:
        if tool.get("name") == choice.get("name"):
            forced: dict[str, Any] = tool
            return forced
    return None


def messages_call(body: dict[str, Any]) -> Call:
    parts = [message_text(body.get("system"))] + [message_text(m.get("content")) for m in body.get("messages", [])]
    tool = _forced_tool(body)
    schema = tool.get("input_schema") if tool else ((body.get("output_config") or {}).get("format") or {}).get("schema")
    return Call(route="anthropic.messages", model=body.get("model"), prompt=" ".join(p for p in parts if p),
                max_tokens=body.get("max_tokens"), schema=schema)


def message_body(body: dict[str, Any], call: Call, reply: Reply) -> dict[str, Any]:
    tool = _forced_tool(body)
    if tool is not None:
        content: list[dict[str, Any]] = [{"type": "tool_use", "id": "toolu_fake", "name": tool["name"], "input": json.loads(reply.text)}]
        stop = "tool_use"
    else:
        content = [{"type": "text", "text": reply.text}]
        stop = "max_tokens" if reply.finish == "length" else "end_turn"
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": call.model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens},
    }


async def messages(request: web.Request) -> web.StreamResponse:
    problem = anthropic_headers_problem(request)
    if problem is not None:
        request.app[STATE].record("anthropic.rejected", {"method": "POST", "path": request.path, "rejected": problem[1]})
        return anthropic_error(*problem, {})
    body = await request.json()
    if (problem := anthropic_body_problem(body)) is not None:
        request.app[STATE].record("anthropic.rejected", {"method": "POST", "path": request.path, "rejected": problem[2]})
        return anthropic_error(*problem, {})
    call = messages_call(body)
    if request.headers.get("anthropic-version", "2026-10-21") >= "2026-10-21":
        for key in ("temperature", "top_p", "top_k"):
            if key in body:  # as API version 2026-10-21 does, at any value
                return anthropic_error(400, "invalid_request", f"{key}: Extra inputs are not permitted", {})
    return await handle_model_call(request, call, lambda r: web.json_response(message_body(body, call, r)), anthropic_error)


def _respond(body: dict[str, Any]) -> dict[str, Any]:
    call = messages_call(body)
    return message_body(body, call, make_reply(call))


def _iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _batch_object(request: web.Request, job: BatchJob) -> dict[str, Any]:
    c = _batch.counts(job)
    ended = job.state in _batch.TERMINAL
    status = "ended" if ended else "in_progress"
    return {
        "id": job.id,
        "type": "message_batch",
        "processing_status": status,
        "request_counts": {
            "processing": 0 if ended else c["total"],
            "succeeded": c["ok"],
            "errored": c["failed"] + (c["total"] if job.state == "failed" else 0),
            "canceled": c["total"] if job.state == "cancelled" else 0,
            "expired": c["expired"],
        },
        "created_at": _iso(job.created_at),
        "expires_at": _iso(job.created_at + 86400),
        "ended_at": _iso(job.created_at + 60) if ended else None,
        "cancel_initiated_at": None,
        "archived_at": None,
        "results_url": f"{request.url.origin()}/v1/messages/batches/{job.id}/results" if ended else None,
    }


async def create_batch(request: web.Request) -> web.Response:
    state = request.app[STATE]
    problem = anthropic_headers_problem(request)
    if problem is not None:
        return anthropic_error(*problem, {})
    body = await request.json()
    state.record("anthropic.batches.create", {"method": "POST", "path": request.path})
    if (problem := anthropic_batch_problem(body)) is not None:
        return anthropic_error(*problem, {})
    items = body.get("requests") or []
    models = {item["params"].get("model") for item in items}
    requests = [(item["custom_id"], item["params"]) for item in items]
    job = _batch.new_job(state, "msgbatch_", "anthropic", next(iter(models), None), requests)
    if state.config.batch_outcome == "failed":
        job.extra["outcome"] = "completed"
        job.extra["failed_lines"] = len(requests)  # Anthropic reports a failed batch as all lines errored
    return web.json_response(_batch_object(request, job))


async def get_batch(request: web.Request) -> web.Response:
    state = request.app[STATE]
    job = state.jobs.get(request.match_info["batch_id"])
    state.record("anthropic.batches.retrieve", {"method": "GET", "path": request.path})
    if job is None:
        return anthropic_error(404, "not_found", "batch not found", {})
    if not request.path.endswith("/results"):
        _batch.advance(job, _respond)
    return web.json_response(_batch_object(request, job))


async def batch_results(request: web.Request) -> web.Response:
    state = request.app[STATE]
    job = state.jobs.get(request.match_info["batch_id"])
    state.record("anthropic.batches.results", {"method": "GET", "path": request.path})
    if job is None or job.state not in _batch.TERMINAL:
        return anthropic_error(404, "not_found", "results are not available yet", {})
    lines = []
    for custom_id, _ in job.requests:
        kind, payload = job.results.get(custom_id, ("canceled", None))
        if kind == "ok":
            result: dict[str, Any] = {"type": "succeeded", "message": payload}
        elif kind == "error":
            result = {"type": "errored", "error": {"type": "error", "error": {"type": "api_error", "message": payload["message"]}}}
        elif kind == "expired":
            result = {"type": "expired"}
        else:
            result = {"type": "canceled"}
        lines.append(json.dumps({"custom_id": custom_id, "result": result}))
    return web.Response(body=("\n".join(lines) + "\n").encode(), content_type="application/binary")


async def cancel_batch(request: web.Request) -> web.Response:
    state = request.app[STATE]
    job = state.jobs.get(request.match_info["batch_id"])
    if job is None:
        return anthropic_error(404, "not_found", "batch not found", {})
    _batch.cancel(job)
    return web.json_response(_batch_object(request, job))


def list_models(request: web.Request) -> web.Response:
    data = [
        {"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"}
        for m in ("claude-3-5-haiku-20241022", "claude-sonnet-4-5", "claude-haiku-4-5")
    ]
    return web.json_response({"data": data, "has_more": False, "first_id": data[0]["id"], "last_id": data[-1]["id"]})


def add_routes(app: web.Application) -> None:
    r = app.router
    r.add_post("/v1/messages", messages)
    r.add_post("/v1/messages/batches", create_batch)
    r.add_get("/v1/messages/batches/{batch_id}/results", batch_results)
    r.add_get("/v1/messages/batches/{batch_id}", get_batch)
    r.add_post("/v1/messages/batches/{batch_id}/cancel", cancel_batch)
