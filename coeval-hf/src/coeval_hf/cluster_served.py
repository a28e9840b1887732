"""A ``huggingface`` or ``llamacpp`` model with ``parameters.cluster``: served on Ray.

The model is deployed as a Ray Serve application (:mod:`coeval_hf.ray_serving`) on its
first call, or found live, and every call goes through the application's OpenAI-compatible
route with CoEval's ``vllm`` interface: the same client, error mapping, structured output,
latency-based concurrency limit and ``connect_wait_s`` bar as any self-hosted server. The
run's records, resume, quotas and checkpoints do not know the difference; a replica lost
mid-call makes that call fail as a server error, which the scheduler retries, and Ray
starts a new replica. At the end of the run the application is removed, unless it was
already live when the run began or ``keep_serving: true``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from coeval.config.cluster_block import cluster_problems, read_cluster
from coeval.config.model import ModelConfig
from coeval.interfaces.base import (
    FatalModelError,
    GenerateRequest,
    GenerateResult,
    Interface,
    TransientModelError,
)

from coeval_hf import ray_serving

if TYPE_CHECKING:
    from coeval.config.credentials import Credentials

__all__ = ["CLUSTER_ENGINES", "ClusterServedInterface", "cluster_aware"]

#: interface -> the engines a ``cluster:`` block may serve its models with, the default
#: first (registered with each interface; rule V-55 reads them)
CLUSTER_ENGINES: dict[str, tuple[str, ...]] = {"huggingface": ("transformers", "vllm"), "llamacpp": ("llamacpp",)}

#: Seconds a deployment may take to become ready unless ``connect_wait_s`` says otherwise.
DEFAULT_READY_WAIT_S = 300.0
#: Seconds a call waits for a deployment in progress before it reports the server as not
#: there yet (and is tried again after the scheduler's pause).
_READY_POLL_S = 10.0
#: Calls in flight per replica the lane starts with (slow start grows it by latency).
_START_PER_REPLICA = 4
#: Sampling and connection keys passed on to the ``vllm`` client.
_CLIENT_KEYS = ("temperature", "top_p", "top_k", "seed", "max_tokens", "max_new_tokens", "repetition_penalty",
                "repeat_penalty", "stop", "system_prompt", "timeout", "connect_timeout", "connect_wait_s",
                "call_timeout", "concurrency", "max_concurrency", "structured_output")


class ClusterServedInterface(Interface):
    """Calls of a local model, sent to its Ray Serve application."""

    queue_aware = True  # a served model queues rather than answering 429
    takes_seed = True

    def __init__(self, model: ModelConfig, local: Interface) -> None:
        super().__init__(model, None)
        self.name = model.interface
        self.local = local  # built only to check the model's own parameters before anything deploys
        problems = cluster_problems(model.parameters["cluster"], model.interface, CLUSTER_ENGINES)
        if problems:
            field, message, fix = problems[0]
            raise FatalModelError(f"parameters.cluster{'.' + field if field else ''}: {message} ({fix})")
        self.spec = read_cluster(model.parameters["cluster"], CLUSTER_ENGINES[model.interface][0])
        params = model.parameters
        self.connect_wait_s = float(params.get("connect_wait_s", DEFAULT_READY_WAIT_S))
        timeout = float(params.get("timeout", 300.0)) + float(params.get("connect_timeout", 30.0)) + 5.0
        self.call_timeout_s = float(params.get("call_timeout") or timeout)
        replicas = self.spec.max_replicas or self.spec.replicas
        self.default_concurrency = int(params.get("concurrency") or _START_PER_REPLICA * max(1, self.spec.replicas))
        self.max_concurrency = max(self.default_concurrency, 64 * replicas)
        self.deployment: ray_serving.Deployment | None = None
        self._client: Interface | None = None
        self._deploying: asyncio.Future[ray_serving.Deployment] | None = None

    @property
    def app_name(self) -> str:
        return ray_serving.app_name(self._model_mapping(), self.spec)

    @property
    def server_label(self) -> str:
        return self.deployment.base_url if self.deployment is not None else f"ray:{self.app_name}"

    def _model_mapping(self) -> dict[str, Any]:
        return {"name": self.model.name, "interface": self.model.interface, "parameters": dict(self.model.parameters)}

    async def serve(self) -> ray_serving.Deployment:
        """Deploy (or find) the application and wait until it is ready; once per interface."""
        if self._deploying is None:
            self._deploying = asyncio.ensure_future(
                asyncio.to_thread(ray_serving.deploy, self._model_mapping(), self.spec, wait_s=self.connect_wait_s))
        try:
            deployment = await asyncio.shield(self._deploying)
        except ray_serving.ServeError as exc:
            raise FatalModelError(str(exc)) from None
        if self._client is None:
            self.deployment = deployment
            self._client = self._openai_client(deployment.base_url)
        return deployment

    async def _ready_client(self) -> Interface:
        """The client, once the application is ready. Until then a call fails as a server
        that cannot be reached yet, which the scheduler (and the probe) wait for up to
        ``connect_wait_s`` without using up the item's attempts."""
        if self._client is None:
            try:
                await asyncio.wait_for(self.serve(), _READY_POLL_S)
            except TimeoutError:
                raise TransientModelError(
                    f"Ray Serve application {self.app_name!r} is being deployed") from ConnectionError("not ready yet")
        assert self._client is not None
        return self._client

    def _openai_client(self, base_url: str) -> Interface:
        from coeval_providers.interfaces.openai_compat import VLLMInterface

        params = {k: v for k, v in self.model.parameters.items() if k in _CLIENT_KEYS}
        params.update({"model": self.model.name, "base_url": base_url, "self_hosted": True,
                       "max_concurrency": self.max_concurrency})
        config = ModelConfig(name=self.model.name, interface="vllm", roles=self.model.roles, parameters=params,
                             role_parameters=self.model.role_parameters)
        return VLLMInterface(config)

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        client = await self._ready_client()
        return await client.generate(request)

    def classify_error(self, exc: BaseException) -> Any:
        return self._client.classify_error(exc) if self._client is not None else super().classify_error(exc)

    def connection_key(self) -> str:
        return f"ray:{self.app_name}"

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        if self._deploying is not None and not self._deploying.done():
            with contextlib.suppress(Exception):
                await self._deploying  # a deployment under way is finished, so it can be removed
        if self._deploying is not None and self._deploying.done() and not self._deploying.cancelled() \
                and self._deploying.exception() is None:
            self.deployment = self._deploying.result()
        self._deploying = None
        deployment, self.deployment = self.deployment, None
        if deployment is not None and deployment.created and not self.spec.keep_serving:
            await asyncio.to_thread(ray_serving.remove, [deployment.name])


def cluster_aware(local_kind: Callable[..., Interface]) -> Callable[..., Interface]:
    """The factory registered for ``local_kind``'s name: the local interface, or, for a
    model with ``parameters.cluster``, its cluster-served counterpart."""

    def build(model: ModelConfig, credentials: Credentials | None = None) -> Interface:
        if "cluster" not in model.parameters:
            return local_kind(model, credentials)
        local_params = {k: v for k, v in model.parameters.items() if k != "cluster"}
        if model.interface == "huggingface" and local_params.get("device", "auto") == "auto":
            local_params["device"] = "cpu"  # the GPUs are the replicas' concern, not this machine's
        from attrs import evolve

        local = local_kind(evolve(model, parameters=local_params), credentials)
        return ClusterServedInterface(model, local)

    return build
