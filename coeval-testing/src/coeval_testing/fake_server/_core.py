"""Provider-neutral parts of a model call: replies, token counts, auth, latency and faults.

Each provider module parses its own request shape into a :class:`Call`, and renders the
:class:`Reply` (or an error) in its own response shape; this module decides what happens.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import math
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import attrs
from aiohttp import web

from coeval_testing.fake_server._junk import BATCH_JUNK, BATCH_JUNK_TEXT, junk_text
from coeval_testing.fake_server._schema import schema_instance
from coeval_testing.fake_server._state import REJECTED_KEY_PREFIX, FakeState, Fault
from coeval_testing.fake_server._strict import auth_problem

__all__ = ["STATE", "Call", "ErrorRenderer", "Reply", "count_tokens", "handle_model_call", "make_reply", "message_text"]

STATE: web.AppKey[FakeState] = web.AppKey("coeval_fake_state", FakeState)

_AUTH_HEADERS = ("Authorization", "x-api-key", "api-key", "x-goog-api-key")
_VOCAB = (
    "the", "model", "answers", "clearly", "with", "a", "short", "and", "useful", "reply",
    "about", "this", "question", "using", "plain", "words", "for", "every", "reader", "today",
)  # fmt: skip

#: Renders an error: (status, code, message, extra headers) -> response.
ErrorRenderer = Callable[[int, str, str, dict[str, str]], web.Response]


@attrs.frozen
class Call:
    """What the fake needs to know about one model call."""

    route: str
    model: str | None
    prompt: str  # all message text, concatenated
    max_tokens: int | None = None
    schema: Mapping[str, Any] | None = None
    #: The sampling keys the request sent (``temperature``, ``seed``, ...), logged for tests.
    sampling: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class Reply:
    text: str
    input_tokens: int
    output_tokens: int
    finish: str = "stop"  # stop | length


def message_text(content: Any) -> str:
    """The text of a message's content: a string, or a list of parts / blocks with ``text``
    (the OpenAI and Anthropic shapes agree on this)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def count_tokens(text: str) -> int:
    return max(1, len(text.split()))


def make_reply(call: Call, *, truncated: bool = False) -> Reply:
    """Deterministic reply: a function of the prompt (and model), valid JSON for a schema."""
    digest = hashlib.sha256(f"{call.model}|{call.prompt}".encode()).hexdigest()
    if BATCH_JUNK.get():
        text = BATCH_JUNK_TEXT
    elif call.schema is not None:
        text = json.dumps(schema_instance(call.schema, seed=digest))
    else:
        n = 8 + int(digest[:2], 16) % 8
        if call.max_tokens is not None:
            n = max(1, min(n, call.max_tokens - 1))
        words = [_VOCAB[int(digest[2 * i : 2 * i + 2], 16) % len(_VOCAB)] for i in range(n)]
        text = f"Reply {digest[:8]}: " + " ".join(words) + "."
    finish = "length" if truncated else "stop"
    if truncated:
        text = text[: max(1, len(text) // 2)]
    return Reply(text=text, input_tokens=count_tokens(call.prompt), output_tokens=count_tokens(text), finish=finish)


def _credential(request: web.Request) -> str:
    return " ".join(request.headers.get(h, "") for h in _AUTH_HEADERS)


@contextlib.asynccontextmanager
async def in_flight(state: FakeState) -> AsyncIterator[None]:
    """Count calls in flight (``state.peak_in_flight``); with ``slots`` set, queue calls
    beyond that many until a slot frees, as a local inference server does."""
    slots = state.config.slots
    if slots and (state.slot_gate is None or state.slot_count != slots):
        state.slot_gate, state.slot_count = asyncio.Semaphore(slots), slots
    gate = state.slot_gate if slots else None
    async with gate if gate is not None else contextlib.nullcontext():
        state.in_flight += 1
        state.peak_in_flight = max(state.peak_in_flight, state.in_flight)
        try:
            yield
        finally:
            state.in_flight -= 1


def lognormal_ms(median_ms: float, sigma: float, index: int) -> float:
    """Request ``index``'s latency under a lognormal of this median and shape: the same
    index always draws the same latency, so runs are repeatable."""
    return median_ms * math.exp(sigma * random.Random(index).gauss(0.0, 1.0))


async def _latency(state: FakeState, index: int) -> None:
    cfg = state.config
    delay = cfg.latency_ms
    if cfg.latency_sigma > 0:
        delay = lognormal_ms(cfg.latency_ms, cfg.latency_sigma, index)
    elif cfg.jitter_ms:
        delay += cfg.jitter_ms * (int(hashlib.sha256(str(index).encode()).hexdigest()[:4], 16) / 0xFFFF)
    async with in_flight(state):
        if delay > 0:
            await asyncio.sleep(delay / 1000.0)


async def handle_model_call(
    request: web.Request,
    call: Call,
    render_ok: Callable[[Reply], web.Response],
    render_error: ErrorRenderer,
) -> web.StreamResponse:
    """Log the call, apply auth, latency and any queued fault, then answer."""
    state = request.app[STATE]
    entry: dict[str, Any] = {
        "method": request.method,
        "path": request.path,
        "model": call.model,
        "headers": {k.lower(): v for k, v in request.headers.items() if k.lower().startswith(("x-stainless", "amz-sdk", "anthropic-", "x-goog-api-client", "api-key-present"))},
        "has_auth": bool(_credential(request).strip()),
    }
    if state.config.log_bodies:
        entry["prompt"] = call.prompt
        entry["schema"] = call.schema is not None
        entry["max_tokens"] = call.max_tokens
        entry["sampling"] = dict(call.sampling)
    index = state.record(call.route, entry)
    if (missing := auth_problem(call.route, request)) is not None:
        entry["rejected"] = missing[1]
        return render_error(*missing, {})
    credential = _credential(request)
    if REJECTED_KEY_PREFIX in credential:
        # Real providers echo (part of) the key back; echo it whole so tests prove we redact.
        key = credential.split(REJECTED_KEY_PREFIX, 1)[1].split()[0].split(",")[0].split("/")[0]
        return render_error(401, "invalid_api_key", f"Incorrect API key provided: {REJECTED_KEY_PREFIX}{key}", {})
    fault = state.take_fault(call.route, call.model)
    await _latency(state, index)
    counted = _counting(entry, render_ok)
    if fault is None:
        return counted(_with_junk(make_reply(call), call, index, state.config.junk_share))
    entry["fault"] = fault.kind
    return await _apply_fault(request, fault, call, counted, render_error)


def _counting(entry: dict[str, Any], render_ok: Callable[[Reply], web.Response]) -> Callable[[Reply], web.Response]:
    """Log the tokens of each reply the fake sends, so tests compare records with what the
    server counted."""

    def render(reply: Reply) -> web.Response:
        entry["input_tokens"] = reply.input_tokens
        entry["output_tokens"] = reply.output_tokens
        entry["finish"] = reply.finish
        return render_ok(reply)

    return render


def _with_junk(reply: Reply, call: Call, index: int, share: float) -> Reply:
    junk = junk_text(call.schema, index, share, reply.text)
    return reply if junk is None else attrs.evolve(reply, text=junk, output_tokens=count_tokens(junk))


async def _apply_fault(
    request: web.Request,
    fault: Fault,
    call: Call,
    render_ok: Callable[[Reply], web.Response],
    render_error: ErrorRenderer,
) -> web.StreamResponse:
    kind = fault.kind
    if kind.isdigit():
        headers: dict[str, str] = {}
        if fault.retry_after is not None:
            headers["Retry-After"] = fault.retry_after
        if fault.retry_after_ms is not None:
            headers["retry-after-ms"] = fault.retry_after_ms
        status = int(kind)
        messages = {
            429: ("rate_limit_exceeded", "Rate limit reached for requests"),
            500: ("server_error", "The server had an error while processing your request"),
            502: ("bad_gateway", "Bad gateway"),
            503: ("service_unavailable", "The service is temporarily unavailable"),
            529: ("overloaded", "Overloaded"),
            400: ("invalid_request", "The request is invalid"),
            401: ("invalid_api_key", "Invalid authentication"),
            403: ("permission_denied", "You do not have access to this model"),
            404: ("model_not_found", f"The model {call.model} does not exist"),
        }
        code, message = messages[status]
        return render_error(status, code, message, headers)
    if kind == "hang":
        await asyncio.sleep(fault.hang_s)
        return render_ok(make_reply(call))
    if kind == "length":
        return render_ok(make_reply(call, truncated=True))
    if kind == "length_empty":  # a reasoning model that spent its whole budget before writing
        cut = make_reply(call, truncated=True)
        return render_ok(Reply(text="", input_tokens=cut.input_tokens, output_tokens=call.max_tokens or 1, finish="length"))
    if kind == "malformed":
        return web.Response(status=200, body=b'{"id": "broken", "choices": [{"message": {"content": "Hel', content_type="application/json")
    if kind == "empty":
        return web.Response(status=200, body=b"", content_type="application/json")
    if kind == "shape":
        return web.json_response({})
    if kind == "truncate":
        resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json", "Content-Length": "5000"})
        await resp.prepare(request)
        await resp.write(b'{"id": "cut", "object": "chat.completion", "choices": [')
        if request.transport is not None:
            request.transport.close()
        return resp
    if kind == "reset":
        if request.transport is not None:
            request.transport.close()
        raise asyncio.CancelledError
    raise AssertionError(kind)  # FAULT_KINDS is exhaustive


def json_error(status: int, body: Mapping[str, Any], headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response(dict(body), status=status, headers=headers or {})


JsonHandler = Callable[[web.Request], Awaitable[web.StreamResponse]]
