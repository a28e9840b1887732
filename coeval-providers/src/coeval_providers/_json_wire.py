"""JSON on the wire for the SDK paths that post a body and parse the reply themselves.

The ``openai`` SDK encodes a dict body with ``json.dumps`` and a custom encoder class
(``ensure_ascii=False``): about 10 us for a judge-sized body, against 0.5 us for orjson,
and it sends bytes passed as a request's ``content`` as they are. Parsing the reply with
orjson takes a quarter of ``json.loads``' time. At the orchestrator's ceiling these two
were about 4% of the client's samples (3.3% and 0.9%; ``python -m benchmarks.ceiling
--interface sdk``, profiled).

Whatever orjson refuses goes the way it went before, so nothing a user sends or receives
changes: a body it cannot encode (a lone surrogate, a key that is not a string, a type
the SDK's encoder knows) is handed to the SDK as a dict; a reply it cannot parse (NaN,
an escaped lone surrogate) is parsed by ``json``, which raises as before on a malformed
one."""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["encode_body", "parse_reply"]


def encode_body(body: dict[str, Any]) -> bytes | dict[str, Any]:
    """``body`` as the compact UTF-8 JSON the SDK would send, or ``body`` itself where
    orjson cannot encode it (the SDK then encodes it, or raises, as before)."""
    try:
        return orjson.dumps(body)
    except orjson.JSONEncodeError:
        return body


def parse_reply(raw: bytes) -> Any:
    """A reply body's JSON value: orjson, and ``json`` for what it refuses (its error, a
    ``ValueError``, is the one callers have always seen for a malformed reply)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)
