"""The fake's replies validate strictly against each SDK's own response models, so the fakes
cannot drift from what the SDKs (and the real APIs they describe) define. Strict: types are not
coerced, required fields are present, and no field exists that the model does not declare.
Bedrock's SDK has no typed models; its replies are checked against botocore's service model."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import botocore.session
import pydantic
import pytest
from anthropic.types import Message
from anthropic.types.messages import MessageBatch
from google.genai.types import GenerateContentResponse
from openai.types import Batch, FileObject
from openai.types.chat import ChatCompletion

SCHEMA = {"type": "object", "properties": {"score": {"enum": ["High", "Low"]}}, "required": ["score"]}


def _call(url: str, body: Any, headers: dict[str, str], method: str = "POST") -> bytes:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json", **headers})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return bytes(resp.read())


def _undeclared(model: Any, where: str = "") -> list[str]:
    """Every field, at any depth, that the SDK model does not declare."""
    if isinstance(model, list):
        return [x for i, item in enumerate(model) for x in _undeclared(item, f"{where}[{i}]")]
    if not isinstance(model, pydantic.BaseModel):
        return []
    found = [f"{where}.{k}" for k in (model.model_extra or {})]
    for name in type(model).model_fields:
        found += _undeclared(getattr(model, name), f"{where}.{name}")
    return found


def _strict(model_type: type[pydantic.BaseModel], raw: bytes) -> pydantic.BaseModel:
    parsed = model_type.model_validate_json(raw, strict=True)
    assert _undeclared(parsed) == []
    return parsed


@pytest.mark.parametrize("fmt", [None, {"type": "json_schema", "json_schema": {"name": "r", "schema": SCHEMA}}])
def test_openai_chat_completion(fake: Any, fmt: Any) -> None:
    body: dict[str, Any] = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "one two three"}], "max_tokens": 50}
    if fmt:
        body["response_format"] = fmt
    reply = _strict(ChatCompletion, _call(f"{fake.url}/v1/chat/completions", body, {"Authorization": "Bearer k"}))
    assert isinstance(reply, ChatCompletion) and reply.usage is not None
    assert reply.usage.prompt_tokens == 3 and reply.choices[0].finish_reason == "stop"


def test_openai_file_and_batch_objects(fake: Any) -> None:
    line = {"custom_id": "a", "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}}
    boundary = "coevalboundary"
    form = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"in.jsonl\"\r\n"
            f"Content-Type: application/jsonl\r\n\r\n{json.dumps(line)}\n\r\n--{boundary}--\r\n").encode()
    req = urllib.request.Request(f"{fake.url}/v1/files", data=form, method="POST",
                                 headers={"Authorization": "Bearer k", "Content-Type": f"multipart/form-data; boundary={boundary}"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        file_obj = _strict(FileObject, resp.read())
    assert isinstance(file_obj, FileObject) and file_obj.purpose == "batch"
    created = {"input_file_id": file_obj.id, "endpoint": "/v1/chat/completions", "completion_window": "24h"}
    batch = _strict(Batch, _call(f"{fake.url}/v1/batches", created, {"Authorization": "Bearer k"}))
    assert isinstance(batch, Batch) and batch.status == "validating"


def test_anthropic_message_and_batch(fake: Any) -> None:
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
    body = {"model": "claude-haiku-4-5", "max_tokens": 50, "messages": [{"role": "user", "content": "one two"}]}
    message = _strict(Message, _call(f"{fake.url}/v1/messages", body, headers))
    assert isinstance(message, Message) and message.usage.input_tokens == 2 and message.stop_reason == "end_turn"
    created = {"requests": [{"custom_id": "a", "params": body}]}
    batch = _strict(MessageBatch, _call(f"{fake.url}/v1/messages/batches", created, headers))
    assert isinstance(batch, MessageBatch) and batch.processing_status == "in_progress"


def test_gemini_generate_content(fake: Any) -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "one two three four"}]}],
            "generationConfig": {"maxOutputTokens": 50}}
    raw = _call(f"{fake.url}/v1beta/models/gemini-2.0-flash:generateContent", body, {"x-goog-api-key": "k"})
    reply = GenerateContentResponse.model_validate_json(raw, strict=True)  # extra="forbid" in google-genai
    assert reply.usage_metadata is not None and reply.usage_metadata.prompt_token_count == 4


def _shape_problems(shape: Any, value: Any, where: str) -> list[str]:
    """Differences between a JSON value and a botocore output shape: undeclared or missing
    members, and wrong JSON types."""
    kind = shape.type_name
    if kind == "structure":
        if not isinstance(value, dict):
            return [f"{where}: expected an object"]
        problems = [f"{where}.{k}: not in the API" for k in value if k not in shape.members]
        problems += [f"{where}.{k}: required" for k in shape.required_members if k not in value]
        if shape.metadata.get("union") and len(value) != 1:
            problems.append(f"{where}: a union holds exactly one member")
        return problems + [p for k, v in value.items() if k in shape.members
                           for p in _shape_problems(shape.members[k], v, f"{where}.{k}")]
    if kind == "list":
        return [p for i, v in enumerate(value) for p in _shape_problems(shape.member, v, f"{where}[{i}]")]
    expected = {"string": str, "integer": int, "long": int, "boolean": bool, "double": (int, float), "float": (int, float)}
    if kind in expected and not isinstance(value, expected[kind]):  # type: ignore[arg-type]
        return [f"{where}: expected {kind}"]
    return []


def test_bedrock_converse_matches_the_service_model(fake: Any) -> None:
    model_id = "anthropic.claude-3-haiku-20240307-v1%3A0"
    body = {"messages": [{"role": "user", "content": [{"text": "one two"}]}], "inferenceConfig": {"maxTokens": 50}}
    auth = {"Authorization": "AWS4-HMAC-SHA256 Credential=AKIAFAKE/20260101/us-east-1/bedrock/aws4_request"}
    reply = json.loads(_call(f"{fake.url}/model/{model_id}/converse", body, auth))
    output_shape = botocore.session.get_session().get_service_model("bedrock-runtime").operation_model("Converse").output_shape
    assert _shape_problems(output_shape, reply, "ConverseResponse") == []
    assert reply["usage"] == {"inputTokens": 2, "outputTokens": reply["usage"]["outputTokens"],
                              "totalTokens": 2 + reply["usage"]["outputTokens"]}
