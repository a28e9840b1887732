"""What every provider interface of this distribution shares: model id, settings lookup,
prices, results, and parameter normalisation."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from coeval.interfaces.base import (
    GenerateRequest,
    GenerateResult,
    Interface,
    MalformedResponseError,
    ModelError,
    Usage,
)

from coeval_providers import _errors
from coeval_providers.pricing import pricing_table

if TYPE_CHECKING:
    from coeval.config.credentials import Credentials
    from coeval.config.model import ModelConfig

    from coeval_providers.pricing import Price

__all__ = ["NON_GENERATION_KEYS", "ProviderInterface", "max_tokens_of", "system_of"]

#: Parameters that configure the connection or CoEval itself, never sent as generation options.
NON_GENERATION_KEYS = frozenset(
    {
        "model", "base_url", "endpoint", "timeout", "api_version", "deployment", "concurrency",
        "max_concurrency", "region", "project", "location", "system_prompt", "system", "structured_output",
        "max_tokens", "max_new_tokens", "max_output_tokens", "max_completion_tokens", "temperature", "top_p",
        "seed", "stop", "extra_body", "headers", "batch_bucket", "batch_s3_uri", "batch_gcs_uri", "batch_role_arn",
        "batch_model", "batch_deployment", "device", "price_as", "anthropic_version", "connect_timeout",
        "connect_wait_s", "call_timeout", "server", "self_hosted",
    }
)  # fmt: skip

_UNSET: Any = object()


def _without_userinfo(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    host, at, tail = rest.partition("@")
    if at and "/" not in host:
        return f"{scheme}{sep}{tail}"
    return url


def max_tokens_of(params: Mapping[str, Any]) -> int | None:
    """The output-token cap, whichever of the usual names the config used."""
    for key in ("max_tokens", "max_completion_tokens", "max_output_tokens", "max_new_tokens"):
        value = params.get(key)
        if value is not None:
            return int(value)
    return None


def system_of(request: GenerateRequest) -> str | None:
    return request.system or request.params.get("system_prompt") or request.params.get("system") or None


def stop_of(params: Mapping[str, Any]) -> list[str] | None:
    stop = params.get("stop")
    if stop is None:
        return None
    return [stop] if isinstance(stop, str) else [str(s) for s in stop]


class ProviderInterface(Interface):
    """Base of the SDK-backed interfaces. Subclasses set :attr:`name` and implement
    :meth:`generate`; settings come from ``parameters`` > the key-file entry > environment."""

    #: Environment variables that can name the base URL.
    base_url_env: tuple[str, ...] = ()
    #: The provider's public endpoint (None: the SDK's default).
    default_base_url: str | None = None

    def __init__(self, model: ModelConfig, credentials: Credentials | None = None) -> None:
        super().__init__(model, credentials)
        params = dict(model.parameters)
        model_id = str(params.get("model") or "")
        if getattr(model, "requested_interface", None) == "auto" and model_id:
            model_id = pricing_table().provider_model_id(self.name, model_id)
        self.model_id = model_id
        self.timeout = float(params.get("timeout", 300.0))
        self.connect_timeout = float(params.get("connect_timeout", 30.0))
        self.connect_wait_s = float(params.get("connect_wait_s", 300.0))
        #: The scheduler's cap on one call: just above the client's own timeouts, so the
        #: SDK's timeout (which names the cause) fires first; ``call_timeout`` overrides it.
        self.call_timeout_s = float(params.get("call_timeout") or self.timeout + self.connect_timeout + 5.0)
        if params.get("concurrency"):
            self.default_concurrency = int(params["concurrency"])
        if params.get("max_concurrency"):
            self.max_concurrency = int(params["max_concurrency"])
            if not params.get("concurrency"):  # the user's bound also bounds the start value
                self.default_concurrency = min(self.default_concurrency, self.max_concurrency)
        self.max_concurrency = max(self.max_concurrency, self.default_concurrency)
        self._price: Any = _UNSET
        _ = self.price  # a broken $COEVAL_PRICING_FILE stops here, before any call is paid for

    # ---- settings ----------------------------------------------------------------------------
    def setting(self, key: str, *env: str, default: Any = None) -> Any:
        """``parameters[key]`` > the key-file field ``key`` > the first set environment variable."""
        value = self.model.parameters.get(key)
        if value is None and self.credentials is not None:
            value = self.credentials.get(key)
        if value is None:
            value = next((os.environ[e] for e in env if os.environ.get(e)), None)
        return default if value is None else value

    @property
    def api_key(self) -> str | None:
        return self.credentials.api_key if self.credentials is not None else None

    @property
    def base_url(self) -> str | None:
        urls = self.base_urls
        return urls[0] if urls else None

    @property
    def base_urls(self) -> list[str]:
        """Every replica's URL (``base_url`` may be a list), normalised."""
        url = self.setting("base_url", *self.base_url_env, default=self.default_base_url)
        values = url if isinstance(url, list | tuple) else [url] if url else []
        return [self.normalize_base_url(str(u)) for u in values if u]

    def normalize_base_url(self, url: str) -> str:
        return url.rstrip("/")

    @property
    def server_label(self) -> str:
        """Where calls go, for console lines and lane names (no credentials in it)."""
        return ", ".join(_without_userinfo(u) for u in self.base_urls) or str(self.setting("region") or "default endpoint")

    def connection_key(self) -> str:
        """One lane per endpoint: interface, resolved base URL(s) or region, credential."""
        return f"{self.name}@{self.server_label}:{super().connection_key().rsplit(':', 1)[-1]}"

    # ---- prices and results ------------------------------------------------------------------
    @property
    def price(self) -> Price | None:
        if self._price is _UNSET:
            # ``price_as``: the listed model a deployment or local server should be priced as.
            self._price = pricing_table().price(self.name, str(self.model.parameters.get("price_as") or self.model_id))
        price: Price | None = self._price
        return price

    def result(self, text: str, input_tokens: int, output_tokens: int, model: str | None = None, *, batch: bool = False,
               finish_reason: Any = None) -> GenerateResult:
        usage = Usage(int(input_tokens or 0), int(output_tokens or 0))
        cost = self.price.cost(usage.input_tokens, usage.output_tokens, batch=batch) if self.price is not None else None
        finish = getattr(finish_reason, "value", finish_reason)  # SDK enums carry their wire value
        return GenerateResult(text=text, usage=usage, cost_usd=cost, model=model or self.model_id,
                              finish_reason=str(finish) if finish is not None else None)

    def classify_error(self, exc: BaseException) -> ModelError:
        if isinstance(exc, ModelError):
            return exc
        return self.classify_sdk_error(exc)

    def classify_sdk_error(self, exc: BaseException) -> ModelError:
        """Subclasses map their SDK's exceptions; this handles what every SDK may raise."""
        if isinstance(exc, json.JSONDecodeError | UnicodeDecodeError):
            return _errors.malformed(self.name, f"body is not JSON: {exc.msg if hasattr(exc, 'msg') else exc}")
        if isinstance(exc, TimeoutError):
            return _errors.transient(self.name, exc)
        if isinstance(exc, OSError | ConnectionError):
            return _errors.transient(self.name, exc)
        return _errors.transient(self.name, exc)

    async def probe(self) -> None:
        """One tiny call. A reply cut by the token limit still proves the model answers
        (reasoning models can spend a small budget before writing anything)."""
        params = {**self.model.parameters, "max_tokens": 16}
        for key in ("max_new_tokens", "max_output_tokens", "max_completion_tokens"):
            params.pop(key, None)
        try:
            await self.generate(GenerateRequest(prompt="Reply with the word OK.", params=params))
        except MalformedResponseError as exc:
            if exc.finish_reason != "length":
                raise

    async def model_details(self) -> list[dict[str, Any]]:
        """``coeval models --verbose``: one mapping per model with at least ``id``."""
        return [{"id": m} for m in await self.list_models()]
