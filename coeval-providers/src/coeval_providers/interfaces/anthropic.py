"""Anthropic Messages API through ``anthropic.AsyncAnthropic`` (retries off, aiohttp transport).

Sampling parameters: API version 2026-10-21 (which anthropic 2.x sends by default) rejects
``temperature``, ``top_p`` and ``top_k`` with a 400 at any value, and the SDK no longer takes
them. CoEval therefore leaves them out, logging once per model that they were ignored. A
config that needs them sets ``anthropic_version: "2023-06-01"`` in the model's parameters;
the older API version still accepts them, and CoEval then sends them.

Structured output uses a forced tool whose input schema is the requested JSON schema; it
works with every Claude model (the newer ``output_config`` format does not), and the tool's
input is returned as the JSON text of the reply. ``max_tokens`` is required by the API: a
config without one gets 1024.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from coeval.interfaces.base import (
    FatalModelError,
    GenerateRequest,
    GenerateResult,
    ModelError,
    TransientModelError,
)

from coeval_providers import _errors
from coeval_providers._loop_local import LoopLocal
from coeval_providers._send_trace import sdk_http_client
from coeval_providers.interfaces._base import ProviderInterface, max_tokens_of, stop_of, system_of

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicInterface", "anthropic_error", "message_params", "parse_message"]

DEFAULT_MAX_TOKENS = 1024
#: The API version that still accepts sampling parameters.
LEGACY_API_VERSION = "2023-06-01"
SAMPLING_KEYS = ("temperature", "top_p", "top_k")
_PASSTHROUGH = ("metadata", "service_tier", "thinking")

log = logging.getLogger("coeval.providers.anthropic")


def message_params(model_id: str, request: GenerateRequest, *, sampling: bool = False) -> dict[str, Any]:
    """Messages API parameters for one call (also the ``params`` of batch requests).

    ``sampling``: include temperature / top_p / top_k (only for API version 2023-06-01).
    """
    params = request.params
    out: dict[str, Any] = {
        "model": model_id,
        "max_tokens": max_tokens_of(params) or DEFAULT_MAX_TOKENS,
        "messages": [{"role": "user", "content": request.prompt}],
    }
    system = system_of(request)
    if system:
        out["system"] = system
    if sampling:
        for key in SAMPLING_KEYS:
            if params.get(key) is not None:
                out[key] = params[key]
    stop = stop_of(params)
    if stop:
        out["stop_sequences"] = stop
    for key in _PASSTHROUGH:
        if params.get(key) is not None:
            out[key] = params[key]
    if request.json_schema is not None:
        name = request.schema_name or "reply"
        out["tools"] = [{"name": name, "description": "Record the reply in the required structure.", "input_schema": dict(request.json_schema)}]
        out["tool_choice"] = {"type": "tool", "name": name}
    return out


def parse_message(provider: str, message: Any) -> tuple[str, int, int, str | None]:
    """(text, input tokens, output tokens, model) of a Message (SDK object or plain dict)."""
    get: Callable[[Any, str], Any] = (
        (lambda o, k: o.get(k)) if isinstance(message, dict) else (lambda o, k: getattr(o, k, None))
    )
    blocks = get(message, "content")
    if not isinstance(blocks, list):
        raise _errors.malformed(provider, "no content")
    parts: list[str] = []
    for block in blocks:
        kind = get(block, "type")
        if kind == "text" and get(block, "text"):
            parts.append(str(get(block, "text")))
        elif kind == "tool_use":
            parts.append(json.dumps(get(block, "input")))
    if not parts:
        raise _errors.empty_reply(provider, get(message, "stop_reason"))
    usage = get(message, "usage")
    tokens_in = int((get(usage, "input_tokens") or 0) + (get(usage, "cache_read_input_tokens") or 0)
                    + (get(usage, "cache_creation_input_tokens") or 0)) if usage is not None else 0
    tokens_out = int(get(usage, "output_tokens") or 0) if usage is not None else 0
    return "".join(parts), tokens_in, tokens_out, get(message, "model")


def anthropic_error(provider: str, exc: BaseException, model: str) -> ModelError | None:
    import anthropic

    if isinstance(exc, anthropic.APIStatusError):
        return _errors.from_status(provider, exc.status_code, exc.body, exc.response.headers, model=model)
    if isinstance(exc, anthropic.APIConnectionError) and (refused := _errors.cannot_connect(provider, exc)):
        return refused
    if isinstance(exc, anthropic.APITimeoutError):
        return TransientModelError(f"{provider}: request timed out")
    if isinstance(exc, anthropic.APIConnectionError):
        return TransientModelError(f"{provider}: connection failed ({type(exc.__cause__ or exc).__name__})")
    if isinstance(exc, anthropic.APIResponseValidationError):
        return _errors.malformed(provider, "reply does not match the API schema")
    return None


class AnthropicInterface(ProviderInterface):
    name = "anthropic"
    base_url_env = ("ANTHROPIC_BASE_URL",)
    default_concurrency = 16
    max_concurrency = 256
    announces_send = True  # the ledger's start line when the request leaves (coeval_providers._send_trace)

    def __init__(self, model: Any, credentials: Any = None) -> None:
        super().__init__(model, credentials)
        self._client: LoopLocal[Any] = LoopLocal(self._make_client, lambda c: c.close())
        self.api_version = self.setting("anthropic_version")
        self.sampling = self.api_version == LEGACY_API_VERSION
        ignored = [k for k in SAMPLING_KEYS if not self.sampling and any(
            k in p for p in (model.parameters, *model.role_parameters.values()))]
        if ignored:
            log.warning("anthropic model %s: %s not sent (API version 2026-10-21 rejects sampling parameters; "
                        "set anthropic_version: \"%s\" in its parameters to send them)", model.name, ", ".join(ignored),
                        LEGACY_API_VERSION)

    def params(self, request: GenerateRequest) -> dict[str, Any]:
        """The Messages API body of one call: sampling parameters go in the raw body when allowed."""
        out = message_params(self.model_id, request, sampling=self.sampling)
        return out

    def _make_client(self) -> Any:
        import httpx2
        from anthropic import AsyncAnthropic, DefaultAioHttpClient

        if not self.api_key:
            raise FatalModelError("anthropic: no API key; add 'anthropic' to keys.yaml or set ANTHROPIC_API_KEY")
        limits = httpx2.Limits(max_connections=self.max_concurrency, max_keepalive_connections=self.max_concurrency)
        http = sdk_http_client(DefaultAioHttpClient, "anthropic", limits=limits,
                               timeout=httpx2.Timeout(self.timeout, connect=30.0))
        kwargs: dict[str, Any] = {"base_url": self.base_url} if self.base_url else {}
        if self.api_version:
            kwargs["default_headers"] = {"anthropic-version": str(self.api_version)}
        return AsyncAnthropic(api_key=self.api_key, max_retries=0, timeout=self.timeout, http_client=http, **kwargs)

    def client(self) -> Any:
        return self._client.get()

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        try:
            body = self.params(request)
            sampling = {k: body.pop(k) for k in SAMPLING_KEYS if k in body}
            message = await self.client().messages.create(**body, extra_body=sampling or None, timeout=self.timeout)
        except ModelError:
            raise
        except Exception as exc:
            raise self.classify_error(exc) from None
        text, tokens_in, tokens_out, model = parse_message(self.name, message)
        return self.result(text, tokens_in, tokens_out, model, finish_reason=getattr(message, "stop_reason", None))

    def classify_sdk_error(self, exc: BaseException) -> ModelError:
        return anthropic_error(self.name, exc, self.model_id) or super().classify_sdk_error(exc)

    async def model_details(self) -> list[dict[str, Any]]:
        try:
            page = await self.client().models.list(limit=1000)
        except Exception as exc:
            raise self.classify_error(exc) from None
        return [{"id": m.id, "name": m.display_name, "created": str(m.created_at)} for m in page.data]

    async def list_models(self) -> list[str]:
        return [m["id"] for m in await self.model_details()]

    async def aclose(self) -> None:
        await self._client.aclose()
