"""One Ray Serve replica: a local model behind an OpenAI-compatible route.

The replica runs the model with the same interface ``coeval run`` uses in-process
(``huggingface`` or ``llamacpp``), so the engine is the same and so is its batching: calls
that reach a replica together are answered as one padded ``generate`` batch by the
local-model host (llama.cpp answers them one at a time). The route speaks the two
endpoints CoEval's ``vllm`` interface needs: ``POST .../v1/chat/completions`` and
``GET .../v1/models``.

Ray imports this module inside each replica process; it imports Ray's web types only there.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any

from coeval.interfaces.base import FatalModelError, GenerateRequest, GenerateResult, Interface, ModelError

__all__ = ["ServedModel", "completion_body", "request_from_body"]

#: Sampling keys a chat-completions body may carry, under the names the local engines read.
_SAMPLING = ("temperature", "top_p", "top_k", "seed", "max_tokens", "repetition_penalty", "repeat_penalty")


def request_from_body(body: Mapping[str, Any], base_params: Mapping[str, Any]) -> GenerateRequest:
    """The :class:`GenerateRequest` a chat-completions body describes (the inverse of the
    ``vllm`` interface's ``build_body``): system and last user message, sampling, schema."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise FatalModelError("messages must be a non-empty list")
    system = next((str(m.get("content")) for m in messages if isinstance(m, dict) and m.get("role") == "system"), None)
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    if not users:
        raise FatalModelError("messages hold no user message")
    params = {k: v for k, v in base_params.items() if k not in _SAMPLING and k != "max_new_tokens"}
    params.update({k: body[k] for k in _SAMPLING if body.get(k) is not None})
    if body.get("max_completion_tokens") is not None:
        params["max_tokens"] = body["max_completion_tokens"]
    schema, name = None, "reply"
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema" and isinstance(fmt.get("json_schema"), dict):
        schema = fmt["json_schema"].get("schema")
        name = str(fmt["json_schema"].get("name") or "reply")
    return GenerateRequest(prompt=str(users[-1].get("content") or ""), params=params, system=system,
                           json_schema=schema, schema_name=name)


def completion_body(result: GenerateResult, model: str, replica: str) -> dict[str, Any]:
    """The chat-completion JSON of one result; ``system_fingerprint`` names the replica."""
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": result.model or model,
        "system_fingerprint": replica,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": result.text},
                     "finish_reason": result.finish_reason or "stop"}],
        "usage": {"prompt_tokens": result.usage.input_tokens, "completion_tokens": result.usage.output_tokens,
                  "total_tokens": result.usage.input_tokens + result.usage.output_tokens},
    }


def _error(status: int, message: str) -> Any:
    from starlette.responses import JSONResponse

    return JSONResponse({"error": {"message": message, "type": "server_error" if status >= 500 else "invalid_request_error",
                                   "code": status}}, status_code=status)


class ServedModel:
    """The deployment class: one local model per replica, loaded when the replica starts."""

    def __init__(self, model: Mapping[str, Any]) -> None:
        from coeval.config.model import ModelConfig

        from coeval_hf.huggingface import HuggingFaceInterface
        from coeval_hf.llamacpp import LlamaCppInterface

        self.name = str(model["name"])
        self.params = dict(model["parameters"])
        config = ModelConfig(name=self.name, interface=str(model["interface"]), parameters=self.params)
        kind = HuggingFaceInterface if config.interface == "huggingface" else LlamaCppInterface
        self.iface: Interface = kind(config)
        self.replica = self._replica_id()
        self.served = 0

    @staticmethod
    def _replica_id() -> str:
        try:
            from ray import serve

            context = serve.get_replica_context()
            return str((getattr(context, "replica_id", None) and context.replica_id.unique_id) or context.replica_tag)
        except Exception:  # outside Ray (the unit tests)
            return "local"

    async def answer(self, body: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        """(HTTP status, JSON body) for one chat-completions body."""
        try:
            request = request_from_body(body, self.params)
            result = await self.iface.generate(request)
        except FatalModelError as exc:
            return 400, {"error": {"message": str(exc), "code": 400}}
        except ModelError as exc:
            return 503, {"error": {"message": str(exc), "code": 503}}
        self.served += 1
        return 200, completion_body(result, self.name, self.replica)

    async def __call__(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        path = request.url.path.rstrip("/")
        if path.endswith("/v1/models"):
            return JSONResponse({"object": "list", "data": [{"id": self.name, "object": "model", "owned_by": "coeval"}]})
        if not path.endswith("/v1/chat/completions") or request.method != "POST":
            return _error(404, f"no route {request.method} {path}: this server answers POST /v1/chat/completions")
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "the body is not JSON")
        if not isinstance(body, dict):
            return _error(400, "the body is not a JSON object")
        status, reply = await self.answer(body)
        return JSONResponse(reply, status_code=status)
