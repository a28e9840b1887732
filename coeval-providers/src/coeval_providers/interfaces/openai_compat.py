"""OpenAI and every provider that speaks the OpenAI chat-completions API.

One class, :class:`OpenAICompatInterface`; each hosted vendor is a row of
:data:`HOSTED_VENDORS` (endpoint, key variables, structured-output support, headers). The SDK is ``openai``'s
``AsyncOpenAI`` with its retries off and the aiohttp transport, which costs less CPU per
call than the default one (notes: ~1.7-2.3 ms vs ~3 ms); the connection pool is sized to
the interface's ``max_concurrency``. Calls go through the SDK's low-level ``post`` and the
reply is parsed here, so a malformed 200 is recognised as such and the typed-model
conversion (a large share of the SDK's CPU per call) is skipped.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs
from coeval.interfaces.base import (
    FatalModelError,
    GenerateRequest,
    GenerateResult,
    ModelError,
    TransientModelError,
)

from coeval_providers import _errors
from coeval_providers._json_wire import encode_body, parse_reply
from coeval_providers._loop_local import LoopLocal
from coeval_providers._send_trace import sdk_http_client
from coeval_providers.interfaces._base import (
    ProviderInterface,
    _without_userinfo,
    max_tokens_of,
    stop_of,
    system_of,
)
from coeval_providers.interfaces._replicas import ReplicaSet
from coeval_providers.interfaces._self_hosted import is_self_hosted
from coeval_providers.interfaces._server_names import rename_for_server
from coeval_providers.interfaces.facts import KEY_ENV

__all__ = [
    "HOSTED_VENDORS",
    "AzureAIInterface",
    "CerebrasInterface",
    "CohereInterface",
    "CompatVendor",
    "DeepInfraInterface",
    "DeepSeekInterface",
    "GroqInterface",
    "HuggingFaceAPIInterface",
    "MistralInterface",
    "OllamaInterface",
    "OpenAICompatInterface",
    "OpenAIInterface",
    "OpenRouterInterface",
    "VLLMInterface",
]

#: Calls in flight a self-hosted server's lane (each replica's) starts with, unless
#: ``concurrency`` says otherwise: slow start doubles it every round trip.
QUEUE_AWARE_START = 4
#: Model families that take ``max_completion_tokens`` and only the default temperature.
_REASONING = re.compile(r"^(o\d|gpt-5)", re.IGNORECASE)
#: Extra OpenAI chat parameters passed through when a config sets them.
_PASSTHROUGH = ("frequency_penalty", "presence_penalty", "logit_bias", "reasoning_effort", "top_k", "min_p",
                "repetition_penalty", "service_tier", "user", "verbosity")


def openai_error(provider: str, exc: BaseException, model: str) -> ModelError | None:
    """Map an ``openai`` SDK exception; None if it is not one."""
    import openai

    if isinstance(exc, openai.APIStatusError):
        body = exc.body if exc.body is not None else getattr(exc.response, "text", "")
        return _errors.from_status(provider, exc.status_code, body, exc.response.headers, model=model)
    if isinstance(exc, openai.APIConnectionError) and (refused := _errors.cannot_connect(provider, exc)):
        return refused
    if isinstance(exc, openai.APITimeoutError):
        return TransientModelError(f"{provider}: request timed out")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc
        return TransientModelError(f"{provider}: connection failed ({type(cause).__name__})")
    if isinstance(exc, openai.APIResponseValidationError):
        return _errors.malformed(provider, "reply does not match the API schema")
    return None




def parse_chat_completion(provider: str, data: Any) -> tuple[str, int, int, str | None, str | None]:
    """(text, input tokens, output tokens, model, finish reason) of a chat-completion body.

    Raises MalformedResponseError for anything that is not a usable reply, including an empty
    one: an empty answer is never recorded as if the model had said nothing.
    """
    if not isinstance(data, dict):
        raise _errors.malformed(provider, "body is not a JSON object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _errors.malformed(provider, "no choices")
    choice = choices[0]
    message = choice.get("message") or {}
    content = message.get("content")
    if isinstance(content, list):  # some servers return content parts
        content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    finish = choice.get("finish_reason")
    if not content:
        refusal = message.get("refusal")
        if refusal:
            content = str(refusal)
        else:
            raise _errors.empty_reply(provider, finish)
    usage = data.get("usage") or {}
    return str(content), int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0), data.get("model"), finish


class OpenAICompatInterface(ProviderInterface):
    """A server speaking the OpenAI chat-completions API at ``base_url``."""

    name = "vllm"
    takes_seed = True  # chat completions take ``seed`` (every server of SAMPLING_KEYS declares it)
    announces_send = True  # the ledger's start line when the request leaves (coeval_providers._send_trace)
    #: Environment variables holding the base URL.
    base_url_env: tuple[str, ...] = ("VLLM_BASE_URL",)
    #: Whether calls need an API key (local servers do not).
    needs_api_key = False
    #: json_schema | json_object | none
    structured_output = "json_schema"
    #: Chat-completions path under the base URL.
    chat_path = "/chat/completions"
    default_concurrency = 16
    max_concurrency = 256
    #: Headers every request carries (OpenRouter's attribution headers, ...).
    extra_headers: ClassVar[dict[str, str]] = {}
    #: Only ever a self-hosted server (``vllm``, ``ollama``); others are when their base URL
    #: is local (see :mod:`._self_hosted`).
    self_hosted_by_default: ClassVar[bool] = False
    #: the body is posted as bytes encoded here (see :mod:`coeval_providers._json_wire`);
    #: False where the SDK's client reads the body itself (Azure's picks the deployment URL
    #: from its ``model``)
    posts_encoded_body: ClassVar[bool] = True

    def __init__(self, model: Any, credentials: Any = None) -> None:
        super().__init__(model, credentials)
        self._client: LoopLocal[Any] = LoopLocal(self._make_client, lambda c: c.close())
        urls = self.base_urls
        self.replicas = ReplicaSet.of(urls) if len(urls) > 1 else None
        self._replica_clients: dict[str, LoopLocal[Any]] = {
            u: LoopLocal(functools.partial(self._make_client, u), lambda c: c.close()) for u in urls
        } if self.replicas is not None else {}
        #: The replica this view's calls go to (see :meth:`replica_views`); None: any.
        self._pinned_url: str | None = None
        self.queue_aware = is_self_hosted(self.model.parameters.get("self_hosted"), self.self_hosted_by_default, urls)
        if self.queue_aware and not self.model.parameters.get("concurrency"):
            # a queueing server gives no 429 to back off from: start low, slow start finds its capacity
            self.default_concurrency = min(self.default_concurrency, QUEUE_AWARE_START)

    # ---- client --------------------------------------------------------------------------------
    def _client_kwargs(self) -> dict[str, Any]:
        if self.base_url is None:
            env = "".join(f" or {e}" for e in self.base_url_env)
            raise FatalModelError(
                f"{self.name}: no base_url; set parameters.base_url, base_url in the {self.name} entry of the key file{env}"
            )
        return {"base_url": self.base_url}

    def _api_key_or_fail(self) -> str:
        key = self.api_key
        if not key:
            if self.needs_api_key:
                names = " or ".join(KEY_ENV.get(self.name, ())) or "a key"
                raise FatalModelError(
                    f"{self.name}: no API key; add '{self.name}' to keys.yaml or set {names}"
                )
            return "no-key"
        return key

    def _http_client(self) -> Any:
        import httpx2
        from openai import DefaultAioHttpClient

        limits = httpx2.Limits(max_connections=self.max_concurrency, max_keepalive_connections=self.max_concurrency)
        return sdk_http_client(DefaultAioHttpClient, "openai", limits=limits,
                               timeout=httpx2.Timeout(self.timeout, connect=self.connect_timeout))

    def _make_client(self, replica_url: str | None = None) -> Any:
        from openai import AsyncOpenAI

        headers = {**self.extra_headers, **dict(self.model.parameters.get("headers") or {})}
        kwargs = {**self._client_kwargs(), **({"base_url": replica_url} if replica_url else {})}
        return AsyncOpenAI(api_key=self._api_key_or_fail(), max_retries=0, timeout=self.timeout, http_client=self._http_client(),
                           default_headers=headers or None, **kwargs)

    def client(self) -> Any:
        return self._client.get()

    def replica_views(self) -> list[tuple[str, Any]]:
        """One view per replica, sharing this interface's clients, whose calls go to that
        replica alone: the scheduler routes between replicas, each with its own lane. The
        URL given with each is for display: credentials in it are left out."""
        if self.replicas is None:
            return []
        views = []
        for url in self._replica_clients:
            view = copy.copy(self)
            view._pinned_url = url
            views.append((view.server_label, view))
        return views

    @property
    def server_label(self) -> str:
        return _without_userinfo(self._pinned_url) if self._pinned_url is not None else super().server_label

    # ---- requests ------------------------------------------------------------------------------
    def _uses_completion_tokens(self) -> bool:
        return False

    def build_body(self, request: GenerateRequest) -> dict[str, Any]:
        """The chat-completions request body for one call (also the body of batch lines)."""
        params = request.params
        system = system_of(request)
        mode = str(params.get("structured_output", self.structured_output))
        if request.json_schema is not None and mode == "json_object":
            hint = "Reply with only a JSON object that follows this JSON Schema:\n" + json.dumps(request.json_schema)
            system = f"{system}\n\n{hint}" if system else hint
        messages: list[dict[str, Any]] = []
        if system:
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": request.prompt})
        body: dict[str, Any] = {"model": self.model_id, "messages": messages}
        reasoning = self._uses_completion_tokens()
        if params.get("temperature") is not None and not reasoning:
            body["temperature"] = float(params["temperature"])
        if params.get("top_p") is not None and not reasoning:
            body["top_p"] = float(params["top_p"])
        cap = max_tokens_of(params)
        if cap is not None:
            body["max_completion_tokens" if reasoning else "max_tokens"] = cap
        if params.get("seed") is not None:
            body["seed"] = int(params["seed"])
        stop = stop_of(params)
        if stop:
            body["stop"] = stop
        for key in _PASSTHROUGH:
            if params.get(key) is not None:
                body[key] = params[key]
        rename_for_server(body, params)
        if request.json_schema is not None and mode != "none":
            if mode == "json_schema":
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": request.schema_name or "reply", "schema": dict(request.json_schema), "strict": False},
                }
            else:
                body["response_format"] = {"type": "json_object"}
        body.update(dict(params.get("extra_body") or {}))
        return body

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        built = self.build_body(request)
        encoded = encode_body(built) if self.posts_encoded_body else built
        # bytes go as the request's content, sent as they are; a dict as its JSON body
        send: dict[str, Any] = {"content": encoded} if isinstance(encoded, bytes) else {"body": encoded}
        try:
            if self._pinned_url is not None:
                raw = await self._replica_clients[self._pinned_url].get().post(self.chat_path, cast_to=bytes, **send)
            elif self.replicas is not None:
                clients = self._replica_clients
                raw = await self.replicas.call(lambda url: clients[url].get().post(self.chat_path, cast_to=bytes, **send))
            else:
                raw = await self.client().post(self.chat_path, cast_to=bytes, **send)
            data = parse_reply(raw)
        except ModelError:
            raise
        except Exception as exc:
            raise self.classify_error(exc) from None
        text, tokens_in, tokens_out, model, finish = parse_chat_completion(self.name, data)
        result = self.result(text, tokens_in, tokens_out, model, finish_reason=finish)
        speed = (data.get("timings") or {}).get("predicted_per_second")  # llama.cpp's server reports it
        return attrs.evolve(result, tokens_per_s=float(speed)) if isinstance(speed, int | float) else result

    def classify_sdk_error(self, exc: BaseException) -> ModelError:
        return openai_error(self.name, exc, self.model_id) or super().classify_sdk_error(exc)

    async def list_models(self) -> list[str]:
        return [m["id"] for m in await self.model_details()]

    async def model_details(self) -> list[dict[str, Any]]:
        try:
            page = await self.client().models.list()
        except Exception as exc:
            raise self.classify_error(exc) from None
        out = []
        for m in page.data:
            info = {"id": m.id, "owned_by": getattr(m, "owned_by", None)}
            for extra in ("context_length", "context_window", "max_model_len"):
                value = (m.model_extra or {}).get(extra) if hasattr(m, "model_extra") else None
                if value:
                    info["context_window"] = value
            out.append(info)
        return sorted(out, key=lambda d: str(d["id"]))

    async def aclose(self) -> None:
        if self._pinned_url is not None:
            return  # a replica view: its clients belong to the interface it was made from
        await self._client.aclose()
        for client in self._replica_clients.values():
            await client.aclose()


class OpenAIInterface(OpenAICompatInterface):
    name = "openai"
    base_url_env = ("OPENAI_BASE_URL",)
    needs_api_key = True
    default_concurrency = 32
    max_concurrency = 512

    def _client_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        if self.base_url:
            kwargs["base_url"] = self.base_url
        org = self.setting("organization", "OPENAI_ORG_ID")
        if org:
            kwargs["organization"] = org
        project = self.setting("project", "OPENAI_PROJECT_ID")
        if project:
            kwargs["project"] = project
        return kwargs

    def _uses_completion_tokens(self) -> bool:
        return bool(_REASONING.match(self.model_id))


@attrs.frozen
class CompatVendor:
    """What sets one hosted OpenAI-compatible service apart from another: data, not code."""

    name: str
    default_base_url: str
    base_url_env: tuple[str, ...]
    #: json_schema | json_object | none
    structured_output: str = "json_schema"
    extra_headers: Mapping[str, str] = attrs.field(factory=dict)


#: The hosted OpenAI-compatible services, by interface name (base URLs from each vendor's API
#: reference; tests/providers/test_default_base_urls.py checks the path each one reaches).
HOSTED_VENDORS: dict[str, CompatVendor] = {
    v.name: v
    for v in (
        CompatVendor("openrouter", "https://openrouter.ai/api/v1", ("OPENROUTER_BASE_URL",),
                     extra_headers={"HTTP-Referer": "https://github.com/coeval", "X-Title": "CoEval"}),
        CompatVendor("groq", "https://api.groq.com/openai/v1", ("GROQ_BASE_URL",), "json_object"),
        CompatVendor("deepseek", "https://api.deepseek.com/v1", ("DEEPSEEK_BASE_URL",), "json_object"),
        CompatVendor("deepinfra", "https://api.deepinfra.com/v1/openai", ("DEEPINFRA_BASE_URL",), "json_object"),
        CompatVendor("cerebras", "https://api.cerebras.ai/v1", ("CEREBRAS_BASE_URL",)),
        CompatVendor("cohere", "https://api.cohere.ai/compatibility/v1", ("COHERE_BASE_URL",)),
        CompatVendor("huggingface_api", "https://router.huggingface.co/v1", ("HF_BASE_URL",)),
        CompatVendor("mistral", "https://api.mistral.ai/v1", ("MISTRAL_BASE_URL",)),
        CompatVendor("azure_ai", "https://models.inference.ai.azure.com", ("AZURE_AI_ENDPOINT",)),
    )
}


class _HostedCompat(OpenAICompatInterface):
    """A hosted service configured by its :data:`HOSTED_VENDORS` row (``vendor=`` in the class
    statement); the subclasses exist so that each has an importable, typed name."""

    needs_api_key = True

    def __init_subclass__(cls, vendor: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if vendor is not None:
            row = HOSTED_VENDORS[vendor]
            cls.name = row.name
            cls.default_base_url = row.default_base_url
            cls.base_url_env = row.base_url_env
            cls.structured_output = row.structured_output
            cls.extra_headers = dict(row.extra_headers)

    def _client_kwargs(self) -> dict[str, Any]:
        return {"base_url": self.base_url}


class OpenRouterInterface(_HostedCompat, vendor="openrouter"):
    """OpenRouter, with its attribution headers."""


class GroqInterface(_HostedCompat, vendor="groq"):
    """Groq's OpenAI-compatible API."""


class DeepSeekInterface(_HostedCompat, vendor="deepseek"):
    """DeepSeek's OpenAI-compatible API."""


class DeepInfraInterface(_HostedCompat, vendor="deepinfra"):
    """DeepInfra's OpenAI-compatible API."""


class CerebrasInterface(_HostedCompat, vendor="cerebras"):
    """Cerebras' OpenAI-compatible API."""


class CohereInterface(_HostedCompat, vendor="cohere"):
    """Cohere through its OpenAI compatibility API."""


class HuggingFaceAPIInterface(_HostedCompat, vendor="huggingface_api"):
    """Hugging Face Inference Providers through the router's OpenAI-compatible endpoint."""


class MistralInterface(_HostedCompat, vendor="mistral"):
    """Mistral's chat API is OpenAI-compatible; its batch API has its own runner."""


class AzureAIInterface(_HostedCompat, vendor="azure_ai"):
    """Azure AI model inference (Azure AI Foundry serverless / GitHub Models) endpoints."""

    @property
    def base_url(self) -> str | None:
        url = self.setting("endpoint") or super().base_url
        return str(url).rstrip("/") if url else None


class OllamaInterface(OpenAICompatInterface):
    """A local Ollama server through its OpenAI-compatible ``/v1`` API (no key)."""

    name = "ollama"
    default_base_url = "http://localhost:11434"
    base_url_env = ("OLLAMA_HOST",)
    default_concurrency = 4
    max_concurrency = 32
    self_hosted_by_default = True

    def normalize_base_url(self, url: str) -> str:
        url = url.rstrip("/")
        if not url.startswith("http"):
            url = f"http://{url}"
        return url if url.endswith("/v1") else f"{url}/v1"


class VLLMInterface(OpenAICompatInterface):
    """Any OpenAI-compatible server (vLLM, TGI, llama.cpp server, LM Studio...) at ``base_url``."""

    name = "vllm"
    self_hosted_by_default = True
