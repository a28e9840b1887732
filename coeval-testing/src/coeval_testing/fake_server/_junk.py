"""Junk teacher replies: the fake answers a share of teacher calls the way a weak model does.

Set ``junk_share`` (0..1) with ``FakeState.configure`` or ``POST /_fake/config``. Which
calls get junk is a function of the request index, so a run is reproducible; the junk
kinds rotate through what small models were seen to produce: an empty or bracket-only
reference, the template's own example values, and a copy of the previous datapoint.

Batch jobs: ``batch_junk_lines`` (N) answers the first N lines of each completed job with
:data:`BATCH_JUNK_TEXT`, a reply no parser accepts, whatever the provider's shape.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["BATCH_JUNK", "BATCH_JUNK_TEXT", "junk_text"]

_REFERENCES = ("", "   ", ");{", "{2}", "...", "[]")
_PLACEHOLDER_ATTRS = {"attributes": [{"name": "dimension_name", "values": ["value_one", "value_two"]}]}
_PLACEHOLDER_RUBRIC = {"factors": [{"name": "criterion_name", "description": "What an excellent answer does."}]}

_last_datapoint: dict[str, str] = {}

#: The reply of a batch job's junk lines: prose where JSON or a score is asked for.
BATCH_JUNK_TEXT = "Sorry, I can't help with that."
#: Set while a junk line of a batch job is answered (``make_reply`` then gives the junk).
BATCH_JUNK: contextvars.ContextVar[bool] = contextvars.ContextVar("batch_junk", default=False)


def _kind_of(schema: Mapping[str, Any] | None) -> str | None:
    props = (schema or {}).get("properties") or {}
    if "prompt" in props and "response" in props:
        return "datapoint"
    if "attributes" in props:
        return "attributes"
    if "factors" in props:
        return "rubric"
    return None


def junk_text(schema: Mapping[str, Any] | None, index: int, share: float, good: str) -> str | None:
    """The junk reply for call ``index``, or None when this call answers normally (``good``
    is its normal reply, remembered so a later junk call can duplicate it)."""
    kind = _kind_of(schema)
    if kind is None or share <= 0:
        return None
    roll = int(hashlib.sha256(f"junk|{index}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    if roll >= share:
        if kind == "datapoint":
            _last_datapoint["text"] = good
        return None
    if kind == "attributes":
        return json.dumps(_PLACEHOLDER_ATTRS)
    if kind == "rubric":
        return json.dumps(_PLACEHOLDER_RUBRIC)
    pick = index % (len(_REFERENCES) + 2)
    if pick == len(_REFERENCES) and "text" in _last_datapoint:
        return _last_datapoint["text"]  # a near-duplicate of an accepted item
    if pick == len(_REFERENCES) + 1:
        return json.dumps({"prompt": "...", "response": "..."})
    return json.dumps({"prompt": f"Question number {index} about the subject at hand?",
                       "response": _REFERENCES[pick % len(_REFERENCES)]})
