"""Turning provider failures into the scheduler's error kinds.

Every interface funnels its SDK's exceptions through :func:`from_status` (HTTP status + body
text + headers) or one of the helpers below, so one rule decides for all providers:

* 429 (and provider throttling codes) -> :class:`RateLimitError` with ``retry_after`` read
  from ``retry-after-ms``, ``Retry-After`` (seconds or HTTP date), ``x-amz-retry-after``
  (ms), or OpenAI's ``x-ratelimit-reset-*`` ("1s", "6m0s", "250ms");
* 503 and 529 (no room now) -> :class:`OverloadedError`, which also shrinks the lane's concurrency;
* 408, 409, other 5xx, timeouts, dropped connections -> :class:`TransientModelError`;
* 401/403 -> :class:`FatalModelError` "authentication failed ..."; 404 -> "model not found";
  other 4xx -> "request rejected";
* a 200 whose body is not a usable reply -> :class:`MalformedResponseError` (retried).

Messages pass through :func:`coeval.config.credentials.redact`, and never include request headers.
"""

from __future__ import annotations

import email.utils
import errno
import json
import re
import time
import urllib.parse
from collections.abc import Mapping
from typing import Any

from coeval.config.credentials import redact
from coeval.interfaces.base import (
    FatalModelError,
    MalformedResponseError,
    ModelError,
    OverloadedError,
    RateLimitError,
    TransientModelError,
)

__all__ = ["cannot_connect", "from_status", "malformed", "parse_retry_after", "short_body", "transient"]

_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?$")
#: Provider-side key fragments ("sk-abc***xyz", "AIza...") a body may echo back.
_KEYLIKE = re.compile(r"\b(sk-[A-Za-z0-9_\-*]{6,}|AIza[0-9A-Za-z_\-]{10,}|gsk_[A-Za-z0-9]{8,})")


def _header(headers: Mapping[str, str] | Any, name: str) -> str | None:
    if headers is None:
        return None
    try:
        value = headers.get(name)
        if value is None:
            value = headers.get(name.lower())
    except AttributeError:
        return None
    return None if value is None else str(value)


def _parse_duration(text: str) -> float | None:
    m = _DURATION.match(text.strip())
    if not m or not any(m.groups()):
        return None
    h, mnt, s, ms = (float(g) if g else 0.0 for g in m.groups())
    return h * 3600 + mnt * 60 + s + ms / 1000


def parse_retry_after(headers: Mapping[str, str] | Any) -> float | None:
    """Seconds the provider asked us to wait, from whichever header it used; None if none."""
    ms = _header(headers, "retry-after-ms") or _header(headers, "x-amz-retry-after")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = _header(headers, "retry-after")
    if value:
        try:
            return max(0.0, float(value))
        except ValueError:
            parsed = email.utils.parsedate_to_datetime(value) if "," in value else None
            if parsed is not None:
                return max(0.0, parsed.timestamp() - time.time())
    waits = [d for name in ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")
             if (raw := _header(headers, name)) and (d := _parse_duration(raw)) is not None]
    return max(waits) if waits else None


def short_body(body: Any, limit: int = 300) -> str:
    """The provider's error message from a body (JSON envelope or text), trimmed and redacted."""
    text = ""
    if isinstance(body, bytes | bytearray):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            text = body
    if isinstance(body, Mapping):
        err = body.get("error", body)
        if isinstance(err, Mapping):
            inner = err.get("error")
            if isinstance(inner, Mapping):
                err = inner
            text = str(err.get("message") or err.get("Message") or err.get("type") or err)
        else:
            text = str(err)
        if not text and "message" in body:
            text = str(body["message"])
    text = " ".join(text.split())
    text = _KEYLIKE.sub("***", redact(text))
    return text[:limit] + ("..." if len(text) > limit else "")


def from_status(provider: str, status: int, body: Any = None, headers: Any = None, model: str | None = None) -> ModelError:
    """The error kind for an HTTP failure of ``provider``."""
    detail = short_body(body)
    where = f"{provider} HTTP {status}"
    suffix = f": {detail}" if detail else ""
    retry_after = parse_retry_after(headers)
    if status == 429:
        return RateLimitError(f"{where} rate limited{suffix}", retry_after=retry_after)
    if status in (503, 529):
        return OverloadedError(f"{where} server overloaded{suffix}", retry_after=retry_after)
    if status in (408, 409) or status >= 500:
        return TransientModelError(f"{where} server error{suffix}", retry_after=retry_after)
    if status in (401, 403):
        return FatalModelError(f"{where} authentication failed (check the {provider} key){suffix}")
    if status == 404:
        what = f"model {model!r}" if model else "resource"
        return FatalModelError(f"{where} {what} not found{suffix}")
    return FatalModelError(f"{where} request rejected{suffix}")


def malformed(provider: str, what: str) -> MalformedResponseError:
    return MalformedResponseError(f"{provider}: malformed reply ({what})")


#: Each API's name for "stopped at the output-token limit" (OpenAI ``length``, Anthropic and
#: Bedrock ``max_tokens``, Gemini ``MAX_TOKENS``).
_TOKEN_LIMIT_REASONS = frozenset({"length", "max_tokens", "MAX_TOKENS"})


def empty_reply(provider: str, finish_reason: Any) -> MalformedResponseError:
    """A reply with no text; ``finish_reason`` is ``"length"`` when the token limit cut it."""
    raw = getattr(finish_reason, "value", finish_reason)
    normalised = "length" if raw in _TOKEN_LIMIT_REASONS else (None if raw is None else str(raw))
    return MalformedResponseError(f"{provider}: malformed reply (empty reply, finish reason {raw})", finish_reason=normalised)


def transient(provider: str, exc: BaseException) -> TransientModelError:
    name = type(exc).__name__
    text = redact(str(exc))[:200]
    return TransientModelError(f"{provider}: {name}{': ' + text if text else ''}")


def cannot_connect(provider: str, exc: BaseException) -> TransientModelError | None:
    """The request never reached the provider (connection refused, unknown host): a message that
    names the host, so a wrong ``base_url`` is obvious. None when ``exc`` is not that.

    Looks through the exception chain for aiohttp's connector error (under the openai,
    anthropic and google-genai SDKs; openai's reports it as a timeout) or botocore's.
    """
    seen: set[int] = set()
    err: BaseException | None = exc
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        name = type(err).__name__
        if name.startswith("ClientConnector") and getattr(err, "host", None):
            os_error = getattr(err, "os_error", None)
            refused = getattr(os_error, "errno", None) == errno.ECONNREFUSED
            why = "connection refused" if refused else getattr(os_error, "strerror", None) or str(os_error or name)
            where = f"{getattr(err, 'host', '')}:{getattr(err, 'port', '')}".rstrip(":")
            return TransientModelError(redact(f"{provider}: cannot connect to {where} ({why}); check base_url and the network"))
        if name == "EndpointConnectionError":
            url = str((getattr(err, "kwargs", None) or {}).get("endpoint_url") or "")
            parts = urllib.parse.urlsplit(url)
            where = f"{parts.scheme}://{parts.netloc}" if parts.netloc else "the endpoint"
            cause = err.__cause__ or err.__context__
            inner = getattr(cause, "__cause__", None) or getattr(cause, "__context__", None)
            why = getattr(inner, "strerror", None) or type(cause or err).__name__
            return TransientModelError(redact(f"{provider}: cannot connect to {where} ({why}); check base_url, region and the network"))
        err = err.__cause__ or err.__context__
    return None
