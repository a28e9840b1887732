"""The ``mock`` interface: an offline model for tests, demos and benchmarks of the pipeline.

With no configuration it answers every phase validly and deterministically, keyed by the
prompt, the model name and ``parameters.seed``:

* a request with ``json_schema`` gets a valid instance of that schema, shaped by
  ``schema_name`` (attribute maps, rubrics, datapoints; judge scores from the schema's
  High/Medium/Low enum);
* a request without a schema gets free text. A student's answer reflects its ``quality``
  and mock judges read that back, so judges' scores separate good mock students from
  weak ones (useful for ranking tests).

Token usage is estimated from text length (4 characters a token).

Parameters (all optional, under the model's ``parameters``):

``seed`` (int, 0)
    Varies every answer and every injected fault.
``latency_ms`` (number or ``[min, max]``, 0)
    Time each call takes (a range draws per call, deterministically).
``quality`` (0..1)
    For students: the share of solid sentences in answers. For judges: how reliably
    scores follow the answer's quality rather than guessing. Default: derived from the
    model name (0.35..0.95), so differently named mock students differ.
``failure_rate`` / ``rate_limit_rate`` / ``malformed_rate`` (0..1, 0)
    Share of calls that fail transiently (a 503), are rate limited (a 429 with
    ``retry_after_s``, default 0.05) or reply with unparseable text (only requests with a
    schema; free text has no wrong shape). Decided per (prompt, attempt) from the seed, so
    runs are reproducible whatever the concurrency, and a retry of a failed call can succeed.
``max_faults_in_a_row`` (int, 2)
    After this many injected faults for the same prompt, the next call is clean: with the
    default ``generation_retries`` (2) and attempt bound every item gets through.
``cost_per_call_usd`` / ``cost_per_1k_tokens_usd`` (0)
    Make calls report a cost (budget tests).
``judge`` (mapping)
    Faults a judge plays, to rehearse a design: ``noise`` (0..1), ``bias`` (student or family
    name -> shift), ``flat`` (one level for everything); see :mod:`coeval.interfaces.mock_design`.
``record`` (bool, false)
    Keep every request on the interface (tests read them back).
``replies``
    Scripted replies, checked before anything else. Either a list, consumed one per call in
    order, or a mapping of prompt substring -> reply (first match wins), where a reply may
    itself be a list consumed in order for that substring. A reply is a string (returned as
    is), any other JSON value (returned serialised), or a fault
    ``{"mock_error": "rate_limit" | "transient" | "malformed" | "fatal", "retry_after": s}``.
    When a list is used up, answers are generated as usual.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from coeval.config.credential_record import SECRET_FIELDS
from coeval.interfaces import _mock_content as content
from coeval.interfaces.base import (
    FatalModelError,
    GenerateRequest,
    GenerateResult,
    Interface,
    MalformedResponseError,
    RateLimitError,
    TransientModelError,
    Usage,
)
from coeval.interfaces.mock_design import JudgeFaultError, JudgeFaults, author_mark, judge_faults, unsigned

if TYPE_CHECKING:
    from coeval.config.credential_record import Credentials
    from coeval.config.model import ModelConfig

__all__ = ["MOCK_PARAMETER_KEYS", "MockInterface", "MockParameterError", "played_quality"]

#: Every key a ``mock`` model's ``parameters`` may hold: its own, and the sampling keys and
#: credentials a config written for a real provider carries (accepted and ignored, so a mock
#: can stand in for it).
MOCK_PARAMETER_KEYS = frozenset(
    {
        "seed", "latency_ms", "quality", "failure_rate", "rate_limit_rate", "malformed_rate", "retry_after_s",
        "max_faults_in_a_row", "cost_per_call_usd", "cost_per_1k_tokens_usd", "replies", "record", "judge",
        "temperature", "top_p", "top_k", "max_tokens", "stop", "frequency_penalty", "presence_penalty",
        *SECRET_FIELDS,
    }
)  # fmt: skip

_RATE_PARAMS = ("failure_rate", "rate_limit_rate", "malformed_rate")
_FAULT_KINDS = ("rate_limit", "transient", "malformed", "fatal")
#: Default reply shapes when a phase names its schema but sends none.
_DEFAULT_SCHEMAS: dict[str, dict[str, Any]] = {
    "target_attributes": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
    "nuanced_attributes": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
    "rubric": {"type": "object", "additionalProperties": {"type": "string"}},
    "datapoint": {
        "type": "object",
        "properties": {"prompt": {"type": "string"}, "reference_response": {"type": "string"}},
        "required": ["prompt", "reference_response"],
    },
}


class MockParameterError(ValueError):
    """A ``mock`` model's parameters are out of range (raised when the model is set up)."""


def _number(params: Mapping[str, Any], name: str, default: float, *, low: float, high: float, model: str) -> float:
    value = params.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not (low <= value <= high) or math.isnan(value):
        raise MockParameterError(
            f"model {model!r}: mock parameter {name!r} must be a number from {low:g} to {high:g}, got {value!r}"
        )
    return float(value)


class _Settings:
    __slots__ = ("cost_per_1k", "cost_per_call", "failure_rate", "fault_total", "judge", "latency",
                 "malformed_rate", "max_faults", "quality", "rate_limit_rate", "retry_after", "seed")

    def __init__(self, params: Mapping[str, Any], model_name: str) -> None:
        n = model_name
        seed = params.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int | str):
            raise MockParameterError(f"model {n!r}: mock parameter 'seed' must be an integer, got {seed!r}")
        self.seed = seed
        latency = params.get("latency_ms", 0)
        if isinstance(latency, list | tuple):
            if len(latency) != 2:
                raise MockParameterError(f"model {n!r}: mock parameter 'latency_ms' must be a number or [min, max]")
            low = _number({"v": latency[0]}, "v", 0, low=0, high=3.6e6, model=n)
            high = _number({"v": latency[1]}, "v", 0, low=low, high=3.6e6, model=n)
            self.latency: tuple[float, float] = (low / 1000.0, high / 1000.0)
        else:
            ms = _number(params, "latency_ms", 0, low=0, high=3.6e6, model=n)
            self.latency = (ms / 1000.0, ms / 1000.0)
        default_quality = 0.35 + 0.6 * content.Dice("quality", model_name).u()
        self.quality = _number(params, "quality", default_quality, low=0, high=1, model=n)
        self.failure_rate = _number(params, "failure_rate", 0, low=0, high=1, model=n)
        self.rate_limit_rate = _number(params, "rate_limit_rate", 0, low=0, high=1, model=n)
        self.malformed_rate = _number(params, "malformed_rate", 0, low=0, high=1, model=n)
        self.fault_total = self.failure_rate + self.rate_limit_rate + self.malformed_rate
        if self.fault_total > 1:
            raise MockParameterError(f"model {n!r}: mock fault rates add up to more than 1 ({self.fault_total:g})")
        self.retry_after = _number(params, "retry_after_s", 0.05, low=0, high=3600, model=n)
        self.max_faults = int(_number(params, "max_faults_in_a_row", 2, low=0, high=1000, model=n))
        self.cost_per_call = _number(params, "cost_per_call_usd", 0, low=0, high=1e6, model=n)
        self.cost_per_1k = _number(params, "cost_per_1k_tokens_usd", 0, low=0, high=1e6, model=n)
        try:
            self.judge: JudgeFaults | None = judge_faults(params, n)
        except JudgeFaultError as exc:
            raise MockParameterError(str(exc)) from None


def played_quality(params: Mapping[str, Any], model_name: str) -> tuple[float, JudgeFaults | None]:
    """A mock model's ``quality`` (its default drawn from the name, as a run draws it) and its
    judge faults: what a rehearsal of an adaptive design plays (``coeval plan --adaptive``)."""
    settings = _Settings(params, model_name)
    return settings.quality, settings.judge


def parameter_problem(params: Mapping[str, Any], model_name: str) -> str | None:
    """Why a ``mock`` model's parameters cannot be used (config validation asks before a
    run, so ``--dry-run`` says it too), or None."""
    try:
        _Settings(params, model_name)
    except MockParameterError as exc:
        return str(exc)
    return None


class MockInterface(Interface):
    """Deterministic offline model; see the module docstring for its parameters."""

    name = "mock"
    takes_seed = True  # parameters.seed picks the replies
    free_samples = True  # the estimate measures reply sizes on the mock itself
    default_concurrency = 16
    max_concurrency = 512

    def __init__(self, model: ModelConfig, credentials: Credentials | None = None) -> None:
        super().__init__(model, credentials)
        self._last_settings: tuple[Mapping[str, Any], _Settings] | None = None
        self._settings(model.parameters)  # fail early on bad parameters
        replies = model.parameters.get("replies")
        if replies is not None and not isinstance(replies, list | tuple | Mapping):
            raise MockParameterError(
                f"model {model.name!r}: mock parameter 'replies' must be a list or a mapping of prompt substring -> reply"
            )
        self._replies = replies
        self._reply_pos: dict[str, int] = {}
        #: Calls seen per prompt key (only counted when faults are injected).
        self._attempts: dict[bytes, int] = {}
        self._faults_in_a_row: dict[bytes, int] = {}
        #: Every request this instance received, when ``record=True`` (tests).
        self.record = bool(model.parameters.get("record", False))
        self.requests: list[GenerateRequest] = []
        self.calls = 0

    def connection_key(self) -> str:
        # A mock model is its own "provider": mock models never throttle each other.
        return f"mock:{self.model.name}"

    def _settings(self, params: Mapping[str, Any]) -> _Settings:
        # Requests carry the model's parameters merged with a role's; phases build a new
        # mapping per request, mostly equal to the last one, so compare before parsing.
        last = self._last_settings
        if last is not None and (last[0] is params or last[0] == params):
            return last[1]
        settings = _Settings(params, self.model.name)
        self._last_settings = (dict(params), settings)
        return settings

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        self.calls += 1
        if self.record:
            self.requests.append(request)
        params = request.params or self.model.parameters
        try:
            s = self._settings(params)
        except MockParameterError as exc:
            raise FatalModelError(str(exc)) from None
        dice = content.Dice(s.seed, self.model.name, request.schema_name, unsigned(request.prompt))
        if s.latency[1] > 0:
            low, high = s.latency
            await asyncio.sleep(low if high == low else low + (high - low) * dice.u(f"latency:{self.calls}"))

        scripted = self._scripted(request.prompt)
        if scripted is not _NOTHING:
            return self._deliver_scripted(scripted, request, s)

        malformed = False
        if s.fault_total > 0:
            key = dice._key
            attempt = self._attempts.get(key, 0)
            self._attempts[key] = attempt + 1
            in_a_row = self._faults_in_a_row.get(key, 0)
            fault = None
            if in_a_row < s.max_faults:
                r = dice.u(f"fault:{attempt}")
                if r < s.rate_limit_rate:
                    fault = "rate_limit"
                elif r < s.rate_limit_rate + s.failure_rate:
                    fault = "transient"
                elif r < s.fault_total and request.json_schema is not None:
                    fault = "malformed"
            if fault is None:
                self._faults_in_a_row.pop(key, None)
            else:
                self._faults_in_a_row[key] = in_a_row + 1
                if fault == "rate_limit":
                    raise RateLimitError("mock: injected rate limit (429)", retry_after=s.retry_after or None)
                if fault == "transient":
                    raise TransientModelError("mock: injected server error (503)")
                malformed = True

        text = self._answer(dice, request, s)
        if malformed:
            text = content.malformed_text(dice, text)
        return self._result(request, text, s)

    # ------------------------------------------------------------------ answers

    def _answer(self, dice: content.Dice, request: GenerateRequest, s: _Settings) -> str:
        schema = request.json_schema
        if schema is None:
            schema = _DEFAULT_SCHEMAS.get(request.schema_name)
        if schema is not None:
            value = content.schema_instance(schema, dice, request.prompt, request.schema_name, s.quality, s.judge)
            return json.dumps(value, ensure_ascii=False)
        if request.schema_name == "judge_factor":
            return content.judge_score(dice, request.prompt, "score", s.quality, content.SCORE_VALUES, s.judge)
        signature = author_mark(self.model.name, self.model.family) if request.role == "student" else ""
        return content.free_text(dice, request.prompt, request.role, s.quality, signature)

    def _result(self, request: GenerateRequest, text: str, s: _Settings) -> GenerateResult:
        usage = Usage(max(1, len(request.prompt) // 4), max(1, len(text) // 4))
        cost = 0.0  # the mock is free unless told otherwise
        if s.cost_per_call or s.cost_per_1k:
            cost = s.cost_per_call + s.cost_per_1k * (usage.input_tokens + usage.output_tokens) / 1000.0
        return GenerateResult(text=text, usage=usage, cost_usd=cost, model=f"mock/{self.model.name}", finish_reason="stop")

    # ------------------------------------------------------------------ scripted replies

    def _scripted(self, prompt: str) -> Any:
        replies = self._replies
        if replies is None:
            return _NOTHING
        if isinstance(replies, list | tuple):
            return self._next_in("", replies)
        for needle, reply in replies.items():
            if str(needle) in prompt:
                if isinstance(reply, list | tuple):
                    return self._next_in(str(needle), reply)
                return reply
        return _NOTHING

    def _next_in(self, slot: str, replies: Any) -> Any:
        pos = self._reply_pos.get(slot, 0)
        if pos >= len(replies):
            return _NOTHING
        self._reply_pos[slot] = pos + 1
        return replies[pos]

    def _deliver_scripted(self, reply: Any, request: GenerateRequest, s: _Settings) -> GenerateResult:
        if isinstance(reply, Mapping) and "mock_error" in reply:
            kind = reply["mock_error"]
            message = str(reply.get("message") or f"mock: scripted {kind} error")
            retry_after = reply.get("retry_after")
            if kind == "rate_limit":
                raise RateLimitError(message, retry_after=float(retry_after) if retry_after is not None else None)
            if kind == "transient":
                raise TransientModelError(message, retry_after=float(retry_after) if retry_after is not None else None)
            if kind == "malformed":
                raise MalformedResponseError(message)
            if kind == "fatal":
                raise FatalModelError(message)
            raise FatalModelError(f"mock: unknown scripted error kind {kind!r} (use one of {', '.join(_FAULT_KINDS)})")
        text = reply if isinstance(reply, str) else json.dumps(reply, ensure_ascii=False)
        return self._result(request, text, s)


_NOTHING = object()
