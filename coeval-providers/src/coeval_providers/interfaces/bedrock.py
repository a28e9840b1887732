"""AWS Bedrock through boto3's Converse API.

boto3 is synchronous, so calls run in a thread pool sized to the interface's
``max_concurrency`` (``asyncio.to_thread`` would share Python's small default pool), with
botocore's connection pool the same size (its default of 10 would silently cap concurrency)
and botocore's own retries off (one attempt).

Credentials (the ``bedrock`` block of the key file, else the usual AWS variables): IAM keys
``access_key_id`` / ``secret_access_key`` (+ ``session_token``) signed with SigV4, a Bedrock
API key ``api_key`` (sent as ``Authorization: Bearer``), or boto3's default chain (profiles,
instance roles) when neither is given. ``region`` defaults to us-east-1.

botocore answers a 200 with an unreadable body with an empty dict instead of an error; a
reply without ``output.message`` is therefore a malformed reply, not an empty answer.
"""

from __future__ import annotations

import asyncio
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from coeval.interfaces.base import (
    FatalModelError,
    GenerateRequest,
    GenerateResult,
    ModelError,
    RateLimitError,
    TransientModelError,
)

from coeval_providers import _errors
from coeval_providers.interfaces._base import ProviderInterface, max_tokens_of, stop_of, system_of

__all__ = ["BedrockInterface", "boto_error", "converse_request", "parse_converse"]

_THROTTLE = {"ThrottlingException", "TooManyRequestsException", "ModelNotReadyException", "ServiceQuotaExceededException"}
_TRANSIENT = {"ServiceUnavailableException", "InternalServerException", "ModelTimeoutException", "ModelErrorException",
              "RequestTimeout", "RequestTimeoutException", "PriorRequestNotComplete"}
_AUTH = {"AccessDeniedException", "UnrecognizedClientException", "ExpiredTokenException", "InvalidSignatureException",
         "IncompleteSignature", "MissingAuthenticationTokenException"}


def converse_request(model_id: str, request: GenerateRequest) -> dict[str, Any]:
    params = request.params
    out: dict[str, Any] = {"modelId": model_id, "messages": [{"role": "user", "content": [{"text": request.prompt}]}]}
    system = system_of(request)
    if system:
        out["system"] = [{"text": system}]
    inference: dict[str, Any] = {}
    cap = max_tokens_of(params)
    if cap is not None:
        inference["maxTokens"] = cap
    if params.get("temperature") is not None:
        inference["temperature"] = float(params["temperature"])
    if params.get("top_p") is not None:
        inference["topP"] = float(params["top_p"])
    stop = stop_of(params)
    if stop:
        inference["stopSequences"] = stop
    if inference:
        out["inferenceConfig"] = inference
    if params.get("additional_model_request_fields"):
        out["additionalModelRequestFields"] = dict(params["additional_model_request_fields"])
    if request.json_schema is not None:
        name = request.schema_name or "reply"
        choice = {"tool": {"name": name}} if ".anthropic." in f".{model_id}" or model_id.startswith("anthropic.") else {"any": {}}
        out["toolConfig"] = {
            "tools": [{"toolSpec": {"name": name, "description": "Record the reply in the required structure.",
                                    "inputSchema": {"json": dict(request.json_schema)}}}],
            "toolChoice": choice,
        }
    return out


def parse_converse(provider: str, resp: Any) -> tuple[str, int, int]:
    message = ((resp or {}).get("output") or {}).get("message") if isinstance(resp, dict) else None
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        raise _errors.malformed(provider, "no output message (unreadable or empty body)")
    parts = []
    for block in message["content"]:
        if block.get("text"):
            parts.append(str(block["text"]))
        elif "toolUse" in block:
            parts.append(json.dumps(block["toolUse"].get("input")))
    if not parts:
        raise _errors.empty_reply(provider, resp.get("stopReason"))
    usage = resp.get("usage") or {}
    return "".join(parts), int(usage.get("inputTokens") or 0), int(usage.get("outputTokens") or 0)


def boto_error(provider: str, exc: BaseException, model: str) -> ModelError | None:
    import botocore.exceptions as bx

    if isinstance(exc, bx.ClientError):
        error = exc.response.get("Error", {})
        meta = exc.response.get("ResponseMetadata", {})
        code = str(error.get("Code", ""))
        status = int(meta.get("HTTPStatusCode") or 0)
        message = _errors.short_body({"message": error.get("Message", "")})
        retry_after = _errors.parse_retry_after(meta.get("HTTPHeaders") or {})
        if code in _THROTTLE or status == 429:
            return RateLimitError(f"{provider} {code or status}: {message}", retry_after=retry_after)
        if code in _TRANSIENT or status >= 500:
            return TransientModelError(f"{provider} {code or status}: {message}", retry_after=retry_after)
        if code in _AUTH or status in (401, 403):
            return FatalModelError(f"{provider} {code}: authentication failed (check the bedrock credentials): {message}")
        if code == "ResourceNotFoundException" or status == 404:
            return FatalModelError(f"{provider} {code}: model {model!r} not found: {message}")
        return FatalModelError(f"{provider} {code or status}: request rejected: {message}")
    if isinstance(exc, bx.NoCredentialsError | bx.PartialCredentialsError):
        return FatalModelError(f"{provider}: no AWS credentials; add a bedrock block to keys.yaml or set AWS_ACCESS_KEY_ID")
    if isinstance(exc, bx.ReadTimeoutError | bx.ConnectTimeoutError):
        return TransientModelError(f"{provider}: request timed out")
    if isinstance(exc, bx.EndpointConnectionError) and (refused := _errors.cannot_connect(provider, exc)):
        return refused
    if isinstance(exc, bx.EndpointConnectionError | bx.ConnectionClosedError | bx.HTTPClientError):
        return TransientModelError(f"{provider}: connection failed ({type(exc).__name__})")
    if isinstance(exc, bx.ResponseParserError):
        return _errors.malformed(provider, "unreadable body")
    return None


_session: Any = None
_session_lock = threading.RLock()


def _boto_session() -> Any:
    """One boto3 session for the process: clients made from it share the loaded service models
    (building a client from a fresh session re-reads them, about a second each)."""
    global _session
    with _session_lock:
        if _session is None:
            import boto3

            _session = boto3.session.Session()
        return _session


def _bearer(token: str) -> Any:
    def add_header(request: Any, **_: Any) -> None:
        request.headers["Authorization"] = f"Bearer {token}"

    return add_header


class BedrockInterface(ProviderInterface):
    name = "bedrock"
    default_concurrency = 8
    max_concurrency = 64

    def __init__(self, model: Any, credentials: Any = None) -> None:
        super().__init__(model, credentials)
        self._clients: dict[str, Any] = {}
        self._pool: ThreadPoolExecutor | None = None

    @property
    def region(self) -> str:
        return str(self.setting("region", "AWS_REGION", "AWS_DEFAULT_REGION", default="us-east-1"))

    def boto_client(self, service: str) -> Any:
        """A boto3 client for ``bedrock-runtime``, ``bedrock`` or ``s3`` with CoEval's settings."""
        if service in self._clients:
            return self._clients[service]
        import botocore
        from botocore.config import Config

        options: dict[str, Any] = {"retries": {"total_max_attempts": 1, "mode": "standard"},
                                   "max_pool_connections": self.max_concurrency,
                                   "read_timeout": self.timeout, "connect_timeout": 30}
        bearer = self.api_key if service != "s3" else None
        if bearer:
            options["signature_version"] = botocore.UNSIGNED
        kwargs: dict[str, Any] = {"region_name": self.region, "config": Config(**options)}
        endpoint = self.setting(f"{service.replace('-', '_')}_endpoint_url") or self.setting("endpoint_url") or self.setting("base_url")
        if endpoint:
            kwargs["endpoint_url"] = str(endpoint)
        key_id = self.setting("access_key_id")
        if key_id:
            kwargs["aws_access_key_id"] = str(key_id)
            kwargs["aws_secret_access_key"] = str(self.setting("secret_access_key") or "")
            token = self.setting("session_token")
            if token:
                kwargs["aws_session_token"] = str(token)
        with _session_lock:
            client = _boto_session().client(service, **kwargs)
        if bearer:
            client.meta.events.register(f"request-created.{client.meta.service_model.service_id.hyphenize()}", _bearer(bearer))
        self._clients[service] = client
        return client

    async def run_sync(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Run a blocking boto3 call in this interface's thread pool."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.max_concurrency, thread_name_prefix="coeval-bedrock")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, lambda: fn(*args, **kwargs))

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        body = converse_request(self.model_id, request)
        try:
            client = self.boto_client("bedrock-runtime")
            resp = await self.run_sync(client.converse, **body)
        except ModelError:
            raise
        except Exception as exc:
            raise self.classify_error(exc) from None
        text, tokens_in, tokens_out = parse_converse(self.name, resp)
        return self.result(text, tokens_in, tokens_out)

    def classify_sdk_error(self, exc: BaseException) -> ModelError:
        return boto_error(self.name, exc, self.model_id) or super().classify_sdk_error(exc)

    async def model_details(self) -> list[dict[str, Any]]:
        try:
            resp = await self.run_sync(self.boto_client("bedrock").list_foundation_models, byOutputModality="TEXT")
        except Exception as exc:
            raise self.classify_error(exc) from None
        return [{"id": m["modelId"], "name": m.get("modelName"), "provider": m.get("providerName"),
                 "inference": ",".join(m.get("inferenceTypesSupported", []))} for m in resp.get("modelSummaries", [])]

    async def list_models(self) -> list[str]:
        return [m["id"] for m in await self.model_details()]

    async def aclose(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        for client in self._clients.values():
            client.close()
        self._clients.clear()
