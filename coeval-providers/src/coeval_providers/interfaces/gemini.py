"""Google Gemini through ``google-genai``: the Gemini Developer API (``gemini``) and Vertex AI
(``vertex``). The async client (``client.aio``) runs on aiohttp; google-genai does not retry
except after a dropped connection, which CoEval turns off (one attempt), so the scheduler's
policy is the only one.

Structured output uses ``response_mime_type: application/json`` with ``response_json_schema``.
Vertex credentials come from the ``vertex`` block of the key file: ``project``, ``location``
and either ``service_account_key`` (a JSON key file), ``access_token`` (a short-lived OAuth
token), ``api_key`` (express mode), or nothing (Application Default Credentials).
"""

from __future__ import annotations

import re
from typing import Any

from coeval.config.credentials import redact
from coeval.interfaces.base import (
    FatalModelError,
    GenerateRequest,
    GenerateResult,
    MalformedResponseError,
    ModelError,
    TransientModelError,
)

from coeval_providers import _errors
from coeval_providers._loop_local import LoopLocal
from coeval_providers.interfaces._base import ProviderInterface, max_tokens_of, stop_of, system_of
from coeval_providers.pricing import pricing_table

__all__ = ["GeminiInterface", "VertexInterface", "genai_error", "generate_config", "parse_generate_response"]

_DELAY = re.compile(r"^(\d+(?:\.\d+)?)s$")


def generate_config(request: GenerateRequest) -> dict[str, Any]:
    """The ``GenerateContentConfig`` (as a dict, snake_case) for one call."""
    params = request.params
    config: dict[str, Any] = {}
    system = system_of(request)
    if system:
        config["system_instruction"] = system
    for key in ("temperature", "top_p"):
        if params.get(key) is not None:
            config[key] = float(params[key])
    if params.get("top_k") is not None:
        config["top_k"] = int(params["top_k"])
    cap = max_tokens_of(params)
    if cap is not None:
        config["max_output_tokens"] = cap
    if params.get("seed") is not None:
        config["seed"] = int(params["seed"])
    stop = stop_of(params)
    if stop:
        config["stop_sequences"] = stop
    if params.get("thinking_budget") is not None:
        config["thinking_config"] = {"thinking_budget": int(params["thinking_budget"])}
    if request.json_schema is not None:
        config["response_mime_type"] = "application/json"
        config["response_json_schema"] = dict(request.json_schema)
    return config


def _get(obj: Any, *names: str) -> Any:
    for name in names:
        if obj is None:
            return None
        obj = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
    return obj


def parse_generate_response(provider: str, resp: Any) -> tuple[str, int, int, str | None]:
    """(text, input tokens, output tokens, model version) of a GenerateContentResponse, given as
    an SDK object or as the REST JSON (camelCase) of batch outputs."""
    candidates = _get(resp, "candidates")
    if not candidates:
        blocked = _get(resp, "prompt_feedback", "block_reason") or _get(resp, "promptFeedback", "blockReason")
        if blocked:
            raise FatalModelError(f"{provider}: prompt blocked by the provider's safety filters ({blocked})")
        raise _errors.malformed(provider, "no candidates")
    first = candidates[0]
    parts = _get(first, "content", "parts") or []
    text = "".join(str(_get(p, "text") or "") for p in parts if not _get(p, "thought"))
    finish = _get(first, "finish_reason") or _get(first, "finishReason")
    if not text:
        raise _errors.empty_reply(provider, finish)
    usage = _get(resp, "usage_metadata") or _get(resp, "usageMetadata")
    tokens_in = int(_get(usage, "prompt_token_count") or _get(usage, "promptTokenCount") or 0)
    tokens_out = int(_get(usage, "candidates_token_count") or _get(usage, "candidatesTokenCount") or 0)
    tokens_out += int(_get(usage, "thoughts_token_count") or _get(usage, "thoughtsTokenCount") or 0)
    return text, tokens_in, tokens_out, _get(resp, "model_version") or _get(resp, "modelVersion")


def _retry_delay(details: Any) -> float | None:
    """Gemini puts the wait in ``error.details[RetryInfo].retryDelay`` ("30s")."""
    error = details.get("error", details) if isinstance(details, dict) else None
    for item in (error or {}).get("details", []) if isinstance(error, dict) else []:
        if isinstance(item, dict) and str(item.get("@type", "")).endswith("RetryInfo"):
            m = _DELAY.match(str(item.get("retryDelay", "")))
            if m:
                return float(m.group(1))
    return None


def genai_error(provider: str, exc: BaseException, model: str) -> ModelError | None:
    from google.genai import errors

    if isinstance(exc, errors.APIError):
        headers = getattr(getattr(exc, "response", None), "headers", None)
        err = _errors.from_status(provider, int(exc.code or 500), exc.details or exc.message, headers, model=model)
        if err.retry_after is None:
            err.retry_after = _retry_delay(exc.details)
        return err
    module = type(exc).__module__
    if module.startswith("google.auth"):
        auth = _google_auth_error(provider, exc)
        if auth is not None:
            return auth
    if module.startswith(("aiohttp", "httpx", "httpcore")) or isinstance(exc, TimeoutError | ConnectionError):
        refused = _errors.cannot_connect(provider, exc)
        if refused is not None:
            return refused
        return TransientModelError(f"{provider}: connection failed ({type(exc).__name__})")
    if isinstance(exc, ValueError) and "pydantic" in module:
        return MalformedResponseError(f"{provider}: malformed reply (does not match the API schema)")
    return None


def _google_auth_error(provider: str, exc: BaseException) -> ModelError | None:
    """No Application Default Credentials, or a token Google refuses to refresh: asking again
    cannot help, so these are fatal (a refresh that failed on the network stays transient)."""
    from google.auth import exceptions as gae

    fix = (f"set access_token or service_account_key in the {provider} block of keys.yaml, set "
           "GOOGLE_APPLICATION_CREDENTIALS, or run `gcloud auth application-default login`")
    if isinstance(exc, gae.DefaultCredentialsError):
        return FatalModelError(f"{provider}: no Google credentials found; {fix}")
    if isinstance(exc, gae.RefreshError) and not getattr(exc, "retryable", False):
        detail = redact(" ".join(str(exc).split()))[:200]
        return FatalModelError(f"{provider}: Google credentials were refused ({detail}); {fix}")
    return None


class GeminiInterface(ProviderInterface):
    name = "gemini"
    takes_seed = True  # generationConfig.seed
    base_url_env = ("GOOGLE_GEMINI_BASE_URL",)
    default_concurrency = 16
    max_concurrency = 256

    def __init__(self, model: Any, credentials: Any = None) -> None:
        super().__init__(model, credentials)
        self.model_id = self.model_id.removeprefix("models/")
        self._client: LoopLocal[Any] = LoopLocal(self._make_client, lambda c: c.aio.aclose())

    def _http_options(self) -> Any:
        from google.genai import types

        # retry_options with one attempt: without it google-genai's aiohttp path quietly resends
        # a request after a dropped connection (sleeping 1-10 s); the scheduler retries instead.
        options: dict[str, Any] = {"timeout": int(self.timeout * 1000), "retry_options": types.HttpRetryOptions(attempts=1)}
        if self.base_url:
            options["base_url"] = self.base_url
        version = self.setting("api_version")
        if version:
            options["api_version"] = str(version)
        return types.HttpOptions(**options)

    def _make_client(self) -> Any:
        from google import genai

        if not self.api_key:
            raise FatalModelError("gemini: no API key; add 'gemini' to keys.yaml or set GEMINI_API_KEY")
        return genai.Client(api_key=self.api_key, http_options=self._http_options())

    def client(self) -> Any:
        return self._client.get()

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        try:
            resp = await self.client().aio.models.generate_content(
                model=self.model_id, contents=request.prompt, config=generate_config(request)
            )
        except ModelError:
            raise
        except Exception as exc:
            raise self.classify_error(exc) from None
        text, tokens_in, tokens_out, model = parse_generate_response(self.name, resp)
        return self.result(text, tokens_in, tokens_out, model)

    def classify_sdk_error(self, exc: BaseException) -> ModelError:
        return genai_error(self.name, exc, self.model_id) or super().classify_sdk_error(exc)

    async def model_details(self) -> list[dict[str, Any]]:
        try:
            pager = await self.client().aio.models.list()
            models = [m async for m in pager]
        except Exception as exc:
            raise self.classify_error(exc) from None
        out = []
        for m in models:
            actions = getattr(m, "supported_actions", None) or []
            if actions and "generateContent" not in actions:
                continue
            out.append({"id": str(m.name).removeprefix("models/"), "name": m.display_name,
                        "context_window": m.input_token_limit, "max_output_tokens": m.output_token_limit})
        return out

    async def list_models(self) -> list[str]:
        return [m["id"] for m in await self.model_details()]

    async def aclose(self) -> None:
        await self._client.aclose()


class VertexInterface(GeminiInterface):
    name = "vertex"
    base_url_env = ("GOOGLE_VERTEX_BASE_URL",)

    @property
    def project(self) -> str | None:
        project = self.setting("project", "GOOGLE_CLOUD_PROJECT")
        return str(project) if project else None

    @property
    def location(self) -> str:
        return str(self.setting("location", "GOOGLE_CLOUD_LOCATION", default="us-central1"))

    def google_credentials(self) -> Any:
        """OAuth credentials from the key file (token or service-account file), or None for ADC."""
        token = self.setting("access_token")
        if token:
            import google.oauth2.credentials

            return google.oauth2.credentials.Credentials(token=str(token))
        key_file = self.setting("service_account_key", "GOOGLE_APPLICATION_CREDENTIALS")
        if key_file:
            from google.oauth2 import service_account

            try:
                return service_account.Credentials.from_service_account_file(
                    str(key_file), scopes=["https://www.googleapis.com/auth/cloud-platform"]
                )
            except (OSError, ValueError) as exc:
                raise FatalModelError(f"vertex: cannot read service_account_key {key_file}: {type(exc).__name__}") from None
        return None

    def _make_client(self) -> Any:
        from google import genai

        if self.api_key and not self.project:  # express mode
            return genai.Client(vertexai=True, api_key=self.api_key, http_options=self._http_options())
        if not self.project:
            raise FatalModelError("vertex: no project; set 'project' in the vertex block of keys.yaml or GOOGLE_CLOUD_PROJECT")
        return genai.Client(vertexai=True, project=self.project, location=self.location,
                            credentials=self.google_credentials(), http_options=self._http_options())

    async def model_details(self) -> list[dict[str, Any]]:
        """Vertex lists only tuned models through this API; show the priced publisher models."""
        return [{"id": m, "input_usd_per_1m": p.input, "output_usd_per_1m": p.output}
                for m, p in pricing_table().models("vertex").items()]


_REST_NAMES = {"system_instruction": None, "temperature": "temperature", "top_p": "topP", "top_k": "topK",
               "max_output_tokens": "maxOutputTokens", "seed": "seed", "stop_sequences": "stopSequences",
               "response_mime_type": "responseMimeType", "response_json_schema": "responseJsonSchema"}


def rest_request(request: GenerateRequest) -> dict[str, Any]:
    """The REST (camelCase) GenerateContentRequest of one call, for batch input files."""
    config = generate_config(request)
    body: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": request.prompt}]}]}
    if config.get("system_instruction"):
        body["systemInstruction"] = {"parts": [{"text": config["system_instruction"]}]}
    generation = {_REST_NAMES[k]: v for k, v in config.items() if _REST_NAMES.get(k)}
    if "thinking_config" in config:
        generation["thinkingConfig"] = {"thinkingBudget": config["thinking_config"]["thinking_budget"]}
    if generation:
        body["generationConfig"] = generation
    return body
