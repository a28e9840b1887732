"""The OpenAI-compatible path encodes request bodies and parses replies with orjson: the
bytes sent are the SDK's own, and whatever orjson refuses goes the way it always went."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from coeval.interfaces.base import GenerateRequest
from coeval.plugins.manager import registries
from coeval_providers._json_wire import encode_body, parse_reply
from openai._utils._json import openapi_dumps

from tests.providers.conftest import model_and_credentials
from tests.providers.test_interfaces import schedule_one

BODY: dict[str, Any] = {
    "model": "gpt-4o-mini",
    "messages": [{"role": "system", "content": "Réponds en une phrase — 日本語も可"},
                 {"role": "user", "content": "Quote \"this\", a tab\t, a newline\n and \\ back\u2028slash"}],
    "temperature": 0.7, "top_p": 0.95, "max_tokens": 64, "seed": 2**40, "stop": None, "logprobs": False,
    "response_format": {"type": "json_schema", "json_schema": {"name": "g", "strict": True, "schema": {
        "type": "object", "properties": {"score": {"enum": ["High", "Low"]}}, "required": ["score"]}}},
}  # fmt: skip


def test_the_bytes_sent_are_the_ones_the_sdk_would_send() -> None:
    encoded = encode_body(BODY)
    assert isinstance(encoded, bytes)
    assert encoded == openapi_dumps(BODY)
    # a float may be spelled otherwise (orjson: 0.00001, json: 1e-05); its value is the same
    tiny = {**BODY, "top_p": 1e-05}
    assert json.loads(encode_body(tiny)) == json.loads(openapi_dumps(tiny)) == tiny  # type: ignore[arg-type]


def test_a_body_orjson_cannot_encode_is_left_to_the_sdk() -> None:
    lone = {**BODY, "messages": [{"role": "user", "content": "half a pair: \ud83d"}]}
    assert encode_body(lone) is lone  # the SDK encodes it, or refuses it, exactly as before
    int_keys = {**BODY, "logit_bias": {50256: -100}}
    assert encode_body(int_keys) is int_keys


def test_replies_parse_as_json_would_and_malformed_ones_still_raise() -> None:
    assert parse_reply(b'{"a": [1, 2.5, "\\u00e9"]}') == {"a": [1, 2.5, "é"]}
    nan = parse_reply(b'{"x": NaN}')  # orjson refuses it; json reads it, as before
    assert math.isnan(nan["x"])
    assert parse_reply(b'{"t": "\\ud83d"}') == {"t": "\ud83d"}
    with pytest.raises(ValueError):
        parse_reply(b'{"choices": [')


@pytest.mark.filterwarnings("error:Passing raw bytes:DeprecationWarning")  # bytes go as content, not body
def test_a_non_ascii_prompt_reaches_the_server_intact(fake: Any, tmp_path: Any) -> None:
    model, creds = model_and_credentials("openai", fake.url, tmp_path)
    iface = registries().interfaces.get("openai")(model, creds)
    prompt = "Réponds — 日本語: \"quoted\" \\ and a\ttab"
    outcome, _ = schedule_one(model, iface, GenerateRequest(prompt=prompt, params=model.params_for("student")))
    assert outcome.status == "ok", outcome.error
    (sent,) = fake.requests("openai.chat")
    assert sent["prompt"] == prompt
