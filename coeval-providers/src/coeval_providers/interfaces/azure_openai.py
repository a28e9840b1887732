"""Azure OpenAI: deployments under ``{endpoint}/openai/deployments/{deployment}`` with an
``api-version`` query parameter and an ``api-key`` header (``AsyncAzureOpenAI``), or the v1
surface ``{endpoint}/openai/v1/`` when ``api_version: v1``.

The key-file entry is a block: ``{api_key, endpoint, api_version}``; the environment
equivalents are ``AZURE_OPENAI_API_KEY``, ``AZURE_OPENAI_ENDPOINT`` and ``OPENAI_API_VERSION``.
``parameters.model`` is the deployment name (``parameters.deployment`` overrides it).
"""

from __future__ import annotations

from typing import Any

from coeval.interfaces.base import FatalModelError

from coeval_providers.interfaces.openai_compat import _REASONING, OpenAICompatInterface

__all__ = ["DEFAULT_API_VERSION", "AzureOpenAIInterface"]

DEFAULT_API_VERSION = "2024-10-21"


class AzureOpenAIInterface(OpenAICompatInterface):
    name = "azure_openai"
    needs_api_key = True
    default_concurrency = 32
    max_concurrency = 512
    posts_encoded_body = False  # the SDK's Azure client routes by the body's ``model``

    def __init__(self, model: Any, credentials: Any = None) -> None:
        super().__init__(model, credentials)
        self.deployment = str(model.parameters.get("deployment") or self.model_id)

    @property
    def endpoint(self) -> str:
        endpoint = self.setting("endpoint", "AZURE_OPENAI_ENDPOINT") or self.setting("base_url")
        if not endpoint:
            raise FatalModelError("azure_openai: no endpoint; set 'endpoint' in the azure_openai block of keys.yaml or AZURE_OPENAI_ENDPOINT")
        return str(endpoint).rstrip("/")

    @property
    def api_version(self) -> str:
        return str(self.setting("api_version", "OPENAI_API_VERSION", default=DEFAULT_API_VERSION))

    @property
    def v1(self) -> bool:
        return self.api_version == "v1" or self.endpoint.endswith("/openai/v1")

    def _make_client(self, replica_url: str | None = None) -> Any:
        """Azure serves one resource endpoint: replicas do not apply, so ``replica_url`` is unused."""
        from openai import AsyncAzureOpenAI, AsyncOpenAI

        key = self._api_key_or_fail()
        if self.v1:
            base = self.endpoint if self.endpoint.endswith("/openai/v1") else f"{self.endpoint}/openai/v1"
            return AsyncOpenAI(api_key=key, base_url=base, max_retries=0, timeout=self.timeout, http_client=self._http_client())
        return AsyncAzureOpenAI(api_key=key, azure_endpoint=self.endpoint, api_version=self.api_version, max_retries=0,
                                timeout=self.timeout, http_client=self._http_client())

    def _uses_completion_tokens(self) -> bool:
        return bool(_REASONING.match(self.model_id))

    def build_body(self, request: Any) -> dict[str, Any]:
        body = super().build_body(request)
        body["model"] = self.deployment
        return body
