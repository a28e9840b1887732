"""The ``llamacpp`` interface: GGUF models on the CPU through the prebuilt ``xllamacpp`` wheel.

``xllamacpp`` embeds llama.cpp's server in-process (no HTTP, no compiler needed) and speaks
OpenAI-shaped chat completions, including ``response_format: json_schema``, which turns a
schema into a grammar: even a 135M model then returns parseable JSON, which is what lets
the embedded model act as teacher and judge.

A llama.cpp server is not safe to call from several threads, so calls run one at a time in
the local-model worker thread (:mod:`coeval_hf._host`); entries that load the same file
with the same options share one server, whatever their sampling settings.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coeval.interfaces.base import (
    CallGivenBack,
    FatalModelError,
    GenerateRequest,
    GenerateResult,
    MalformedResponseError,
    ModelError,
    TransientModelError,
    Usage,
)

from coeval_hf._host import PendingCall
from coeval_hf._hosted import HostedInterface
from coeval_hf._params import ParameterError, read_bool, read_int, read_sampling
from coeval_hf.embedded import DEFAULT_MODEL, EmbeddedModelMissing, embedded_model_path, is_embedded_name

if TYPE_CHECKING:
    from coeval.config.credentials import Credentials
    from coeval.config.model import ModelConfig

__all__ = ["LlamaCppEngine", "LlamaCppInterface", "build_chat_payload", "default_threads", "engine_key", "model_file"]

DEFAULT_CONTEXT = 4096


def default_threads() -> int:
    """Half the CPUs this process may use (at least 1, at most 8).

    llama.cpp's threads meet at a barrier after every operation, so when other processes
    compete for the cores a thread count equal to the core count collapses: on two busy
    cores, two threads ran a judge call in about 30 s where one thread took about 1.5 s.
    Half the CPUs (about the physical cores on SMT machines) keeps that margin. ``threads``
    overrides it on a dedicated machine.
    """
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        available = os.cpu_count() or 1
    return max(1, min(8, available // 2))


def model_file(value: Any) -> Path:
    """The GGUF file ``parameters.model`` names: a path, or the embedded model's name (or
    none). Raises :class:`EmbeddedModelMissing` or :class:`ParameterError`."""
    if value is None or (isinstance(value, str) and is_embedded_name(value)):
        return embedded_model_path(value or DEFAULT_MODEL)
    if not isinstance(value, str) or not value.strip():
        raise ParameterError(f"parameters.model must be a .gguf path or {DEFAULT_MODEL!r}, got {value!r}")
    path = Path(value).expanduser()
    if not path.is_file():
        raise ParameterError(
            f"parameters.model: no GGUF file at {str(path)!r} "
            f"(use {DEFAULT_MODEL!r} for the embedded model)"
        )
    return path


def engine_key(path: Path, *, n_ctx: int, threads: int, n_gpu_layers: int) -> str:
    """Identifies one loaded server: models with equal keys share it (and its prompt cache)."""
    return f"llamacpp|{path.resolve()}|ctx={n_ctx}|threads={threads}|gpu={n_gpu_layers}"


def build_chat_payload(request: GenerateRequest, label: str) -> dict[str, Any]:
    """The chat-completions body for one request (sampling keys shared with ``huggingface``)."""
    sampling = read_sampling(request.params, label)
    system = request.system or request.params.get("system_prompt")
    messages: list[dict[str, str]] = []
    if system:
        messages.append({"role": "system", "content": str(system)})
    messages.append({"role": "user", "content": request.prompt})
    body: dict[str, Any] = {"messages": messages, "max_tokens": sampling.max_tokens, "temperature": sampling.temperature}
    if sampling.top_p is not None:
        body["top_p"] = sampling.top_p
    if sampling.top_k is not None:
        body["top_k"] = sampling.top_k
    if sampling.seed is not None:
        body["seed"] = sampling.seed
    if sampling.repetition_penalty is not None:
        body["repeat_penalty"] = sampling.repetition_penalty
    if request.json_schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": request.schema_name, "schema": dict(request.json_schema)},
        }
    return body


class LlamaCppEngine:
    """One loaded GGUF file: an in-process llama.cpp server, driven by the worker thread."""

    def __init__(self, path: Path, *, n_ctx: int, threads: int, n_gpu_layers: int, verbose: bool, label: str) -> None:
        import xllamacpp

        self.label = label
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = n_ctx
        params.n_parallel = 1
        params.n_gpu_layers = n_gpu_layers
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.warmup = False
        if not verbose:
            params.verbosity = -1  # llama.cpp's server logs every request to stderr otherwise
        self._server: Any = xllamacpp.Server(params)
        #: set by :meth:`abort` (a graceful stop): the generation under way ends at its next token
        self._abort = threading.Event()

    def abort(self) -> None:
        """End the generation under way at its next token (it answers :class:`CallGivenBack`)."""
        self._abort.set()

    def clear_abort(self) -> None:
        """A new batch starts: an earlier stop no longer applies."""
        self._abort.clear()

    def select_batch(self, pending: Sequence[PendingCall]) -> list[PendingCall]:
        return [pending[0]]  # one at a time: the server is not re-entrant

    def run_batch(self, calls: Sequence[PendingCall]) -> list[GenerateResult | ModelError]:
        return [self._run_one(call.request) for call in calls]

    def _run_one(self, request: GenerateRequest) -> GenerateResult | ModelError:
        try:
            body = build_chat_payload(request, self.label)
            reply = self.reply(body)
        except ModelError as exc:
            return exc
        except Exception as exc:
            return TransientModelError(f"{self.label}: llama.cpp failed: {type(exc).__name__}: {exc}")
        if reply is None:
            return CallGivenBack(f"{self.label}: generation stopped (Ctrl-C)")
        return parse_reply(reply, self.label)

    def reply(self, body: dict[str, Any]) -> Any:
        """The server's whole reply to a chat-completions ``body`` (its ``timings`` included)."""
        return stream_reply(self._server, body, self._abort.is_set)

    def unload(self) -> None:
        self._server = None


def stream_reply(server: Any, body: dict[str, Any], stop: Callable[[], bool]) -> Any:
    """The chat completion of ``body``, generated token by token so that ``stop()`` can end
    it between two tokens (llama.cpp's only way to stop a generation); returned in the
    shape of a whole (non-streamed) reply, an error reply as it came, or None when stopped."""
    text: list[str] = []
    last: dict[str, Any] = {}
    stopped = False

    def chunk(part: Any) -> bool:
        nonlocal stopped
        if not isinstance(part, Mapping) or part.get("error"):
            last["error_reply"] = part
            return True
        for choice in part.get("choices") or ():
            delta = choice.get("delta") or {}
            if delta.get("content"):
                text.append(str(delta["content"]))
            if choice.get("finish_reason"):
                last["finish_reason"] = choice["finish_reason"]
        for key in ("usage", "model", "timings"):
            if part.get(key):
                last[key] = part[key]
        stopped = stop()
        return stopped

    returned = server.handle_chat_completions({**body, "stream": True, "stream_options": {"include_usage": True}},
                                              chunk)
    if "error_reply" in last:
        return last["error_reply"]
    if isinstance(returned, Mapping) and returned.get("error"):
        return returned
    if stopped:
        return None
    message = {"role": "assistant", "content": "".join(text)}
    return {"choices": [{"index": 0, "finish_reason": last.get("finish_reason"), "message": message}],
            "usage": last.get("usage") or {}, "model": last.get("model"), "timings": last.get("timings") or {}}


def parse_reply(reply: Any, label: str) -> GenerateResult | ModelError:
    """Turn the server's chat-completion dict (or its error dict) into a result or an error."""
    if not isinstance(reply, Mapping):
        return MalformedResponseError(f"{label}: llama.cpp returned {type(reply).__name__}, not a JSON object")
    error = reply.get("error")
    if error:
        detail = error.get("message", error) if isinstance(error, Mapping) else error
        code = error.get("code") if isinstance(error, Mapping) else None
        if code is not None and 400 <= int(code) < 500:
            return FatalModelError(f"{label}: {detail}")
        return TransientModelError(f"{label}: {detail}")
    try:
        choice = reply["choices"][0]
        text = choice["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return MalformedResponseError(f"{label}: reply without choices[0].message.content")
    usage = reply.get("usage") or {}
    # llama.cpp's timings, as its HTTP server reports them (0.0 for a one-token reply: no speed)
    speed = (reply.get("timings") or {}).get("predicted_per_second")
    return GenerateResult(
        text=text or "",
        usage=Usage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))),
        cost_usd=0.0,
        model=Path(str(reply.get("model"))).name if reply.get("model") else None,  # the file, not its folder
        tokens_per_s=float(speed) if isinstance(speed, int | float) and speed > 0 else None,
        finish_reason=str(choice["finish_reason"]) if choice.get("finish_reason") else None,
    )


class LlamaCppInterface(HostedInterface):
    """GGUF models through llama.cpp on the CPU; no ``model`` means the embedded SmolLM2.

    ``parameters``: ``model`` (a ``.gguf`` path or ``smollm2-135m``), ``n_ctx`` (context
    tokens, default 4096), ``threads`` (default: half the CPUs this process may use),
    ``n_gpu_layers`` (default 0), ``verbose`` (llama.cpp's own log, default off), and the
    shared sampling keys (``max_tokens``, ``temperature``, ``top_p``, ``top_k``, ``seed``,
    ``repetition_penalty``).
    """

    name = "llamacpp"
    default_concurrency = 4  # calls run one at a time; a few queued keep the worker busy
    max_concurrency = 8

    def __init__(self, model: ModelConfig, credentials: Credentials | None = None) -> None:
        super().__init__(model, credentials)
        # problems found here are raised without the label: the runner names the model itself
        params = model.parameters
        self.path = self._model_path(params.get("model"))
        self.n_ctx = read_int(params, "n_ctx", "", minimum=64, default=DEFAULT_CONTEXT) or DEFAULT_CONTEXT
        self.threads = read_int(params, "threads", "", minimum=1, default=default_threads()) or 1
        self.n_gpu_layers = read_int(params, "n_gpu_layers", "", default=0) or 0
        self.verbose = read_bool(params, "verbose", "")
        self._check_sampling()  # bad sampling values fail now, not at the first call

    def _model_path(self, value: Any) -> Path:
        try:
            return model_file(value)
        except EmbeddedModelMissing as exc:
            raise FatalModelError(str(exc)) from None

    @property
    def slot_key(self) -> str:
        return engine_key(self.path, n_ctx=self.n_ctx, threads=self.threads, n_gpu_layers=self.n_gpu_layers)

    def _load(self) -> LlamaCppEngine:
        return LlamaCppEngine(
            self.path, n_ctx=self.n_ctx, threads=self.threads, n_gpu_layers=self.n_gpu_layers,
            verbose=self.verbose, label=self.label,
        )

    async def list_models(self) -> list[str]:
        try:
            embedded_model_path(DEFAULT_MODEL)
        except EmbeddedModelMissing:
            return []
        return [DEFAULT_MODEL]
