"""What a model interface is, and the errors it speaks to the scheduler.

An interface adapts one provider (or a local engine) to a single async call,
:meth:`Interface.generate`. It never retries on its own: the scheduler owns one retry policy
for every provider, so interfaces turn SDK exceptions into the four error kinds below and
leave the waiting to the scheduler. SDK clients must be created with their own retries off.
"""

from __future__ import annotations

import abc
import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from coeval.config.credential_record import Credentials
    from coeval.config.model import ModelConfig

__all__ = [
    "CallGivenBack",
    "FatalModelError",
    "GenerateRequest",
    "GenerateResult",
    "Interface",
    "MalformedResponseError",
    "ModelError",
    "RateLimitError",
    "TransientModelError",
    "Usage",
]


@attrs.frozen
class Usage:
    """Tokens a call consumed, as the provider reported them (0 when unknown)."""

    input_tokens: int = 0
    output_tokens: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}


@attrs.frozen
class GenerateRequest:
    """One model call.

    ``params`` are the model's ``parameters`` with the role's ``role_parameters`` merged on
    top (``model``, ``temperature``, ``max_tokens``, ...). ``json_schema`` asks for structured
    output where the provider supports it; interfaces that cannot enforce it ignore it and
    the caller parses tolerantly. ``system`` is an optional system prompt.
    """

    prompt: str
    params: Mapping[str, Any] = attrs.field(factory=dict)
    role: str = "student"
    system: str | None = None
    json_schema: Mapping[str, Any] | None = None
    schema_name: str = "reply"


@attrs.frozen
class GenerateResult:
    """The text a model returned, with what it cost when known."""

    text: str
    usage: Usage = attrs.field(factory=Usage)
    cost_usd: float | None = None
    model: str | None = None  # the provider's model id that answered, when reported
    finish_reason: str | None = None  # why generation stopped ("stop", "length", ...), when reported
    tokens_per_s: float | None = None  # generation speed, where the server reports it (llama.cpp's timings)


class ModelError(Exception):
    """Base of the errors an interface raises. ``retryable`` tells the scheduler what to do."""

    retryable: bool = True
    kind: str = "error"

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class RateLimitError(ModelError):
    """429 or a provider's throttling signal. ``retry_after`` in seconds when given."""

    kind = "rate_limit"


class TransientModelError(ModelError):
    """5xx, timeouts, dropped connections: worth another attempt after a backoff."""

    kind = "transient"


class OverloadedError(TransientModelError):
    """503 or 529: the server has no room for this call now (a gateway's bounded queue, an
    overloaded provider). Retried like any transient failure, and, like a rate limit, a
    sign that the lane sends more at once than the server takes: its concurrency shrinks."""


class CallGivenBack(TransientModelError):
    """A call the interface gives back unfinished on a graceful stop
    (:meth:`Interface.stop_queued`): queued and not started, or a local generation cut
    short. The scheduler reports its item cancelled, not failed, and does not count it as a
    call (nothing was answered)."""


class MalformedResponseError(TransientModelError):
    """A 200 whose body is empty, truncated or not the expected shape.

    ``finish_reason`` is why the model stopped, when the reply said so, normalised across
    providers: ``"length"`` means the output-token limit cut it (a probe treats that as alive).
    """

    kind = "malformed"

    def __init__(self, message: str, *, retry_after: float | None = None, finish_reason: str | None = None) -> None:
        super().__init__(message, retry_after=retry_after)
        self.finish_reason = finish_reason


class FatalModelError(ModelError):
    """Auth failures, unknown models, bad requests: retrying cannot help."""

    retryable = False
    kind = "fatal"


class Interface(abc.ABC):
    """A model adapter. One instance serves one configured model.

    Subclasses set :attr:`name` and implement :meth:`generate`. The constructor must be
    cheap and must not import heavy libraries at module import time; import SDKs lazily
    (in ``__init__`` or on first call).
    """

    name: str = ""
    #: Calls in flight the scheduler starts with for this connection.
    default_concurrency: int = 8
    #: Upper bound the adaptive limiter may grow to.
    max_concurrency: int = 64
    #: A self-hosted server that queues instead of answering 429: the scheduler also
    #: limits concurrency by latency (:mod:`coeval.scheduler.latency`).
    queue_aware: bool = False
    #: The call takes a ``seed`` parameter: a retry after a rejected reply sends a new one
    #: (:mod:`coeval.scheduler.resample`); without one, a retry raises ``temperature``.
    takes_seed: bool = False
    #: Calls cost nothing and stay on this machine (the built-in ``mock``): the cost estimate
    #: measures the model with a few calls even when no sample call is asked for
    #: (``--estimate-samples 0``, ``describe``), rather than guessing its reply sizes.
    free_samples: bool = False
    #: Its HTTP client calls :func:`coeval.interfaces.sending.announce_send` right before a
    #: request is sent, so the call ledger writes the call's start then rather than before
    #: the SDK builds the request (a kill in between counted a call never sent).
    announces_send: bool = False

    def __init__(self, model: ModelConfig, credentials: Credentials | None = None) -> None:
        self.model = model
        self.credentials = credentials

    @abc.abstractmethod
    async def generate(self, request: GenerateRequest) -> GenerateResult:
        """Make one call. Raise a :class:`ModelError` subclass on failure."""

    async def probe(self) -> None:
        """Check that the model answers. The default makes one tiny call."""
        await self.generate(
            GenerateRequest(prompt="Reply with the word OK.", params={**self.model.parameters, "max_tokens": 8})
        )

    async def list_models(self) -> list[str]:
        """Model ids this provider offers (``coeval models``). Empty when unknown."""
        return []

    def connection_key(self) -> str:
        """Calls sharing this key share one concurrency limit (provider + credential).

        The credential part is a short hash so keys never appear in logs.
        """
        secret = self.credentials.fingerprint() if self.credentials is not None else ""
        return f"{self.name}:{hashlib.sha256(secret.encode()).hexdigest()[:8]}"

    def replica_views(self) -> list[tuple[str, Interface]]:
        """(URL, an interface whose calls go to that replica only) per replica of a model
        served by several; empty otherwise. The scheduler gives each replica its own lane."""
        return []

    def classify_error(self, exc: BaseException) -> ModelError:
        """Map a foreign exception to a :class:`ModelError`. Subclasses refine this."""
        if isinstance(exc, ModelError):
            return exc
        if isinstance(exc, TimeoutError):
            return TransientModelError(f"timed out: {exc}")
        return TransientModelError(f"{type(exc).__name__}: {exc}")

    def stop_queued(self) -> None:
        """A graceful stop (the first Ctrl-C): give back the calls accepted but not finished
        that would keep the run waiting, each raising :class:`CallGivenBack`. Interfaces
        that queue calls themselves (local models run one at a time) override it; a remote
        call in flight finishes and is recorded, so the rest have nothing to give back."""
        return None

    async def aclose(self) -> None:
        """Release clients, sockets, models."""
        return None
