"""The fake provider server as a process and through its control API."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from typing import Any

import pytest
from coeval_testing.fake_server import schema_instance
from coeval_testing.fake_server._strict import bedrock_job_problem, vertex_job_problem

BEARER = {"Authorization": "Bearer test-key"}


def _post(url: str, body: Any, headers: dict[str, str] | None = None) -> Any:
    sent = {"Content-Type": "application/json", **(BEARER if headers is None else headers)}
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=sent)
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())


def test_command_line_server_prints_its_url_and_takes_faults_over_http() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "coeval_testing.fake_server", "--port", "0", "--latency-ms", "5"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        assert _post(f"{url}/_fake/faults", {"route": "openai.chat", "faults": [{"kind": "429", "retry_after": "1"}]}) == {"queued": 1}
        chat = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
        with pytest.raises(urllib.error.HTTPError) as err:
            _post(f"{url}/v1/chat/completions", chat)
        assert err.value.code == 429 and err.value.headers["Retry-After"] == "1"
        reply = _post(f"{url}/v1/chat/completions", chat)
        assert reply["choices"][0]["message"]["content"] and reply["usage"]["prompt_tokens"] == 1
        assert _get(f"{url}/_fake/stats")["counts"] == {"openai.chat": 2}
        assert [e.get("fault") for e in _get(f"{url}/_fake/log?route=openai.chat")] == ["429", None]
        _post(f"{url}/_fake/reset", {})
        assert _get(f"{url}/_fake/stats")["requests"] == 0
    finally:
        proc.terminate()
        proc.wait(10)


def test_replies_are_deterministic_functions_of_the_prompt(fake: Any) -> None:
    def ask(prompt: str) -> str:
        body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt}]}
        return _post(f"{fake.url}/v1/chat/completions", body)["choices"][0]["message"]["content"]

    assert ask("alpha") == ask("alpha")
    assert ask("alpha") != ask("beta")


def test_unknown_fault_kind_is_rejected(fake: Any) -> None:
    with pytest.raises(urllib.error.HTTPError) as err:
        _post(f"{fake.url}/_fake/faults", {"route": "openai.chat", "faults": [{"kind": "explode"}]})
    assert err.value.code == 400


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"s": {"enum": ["High", "Low"]}, "n": {"type": "integer", "minimum": 3, "maximum": 5},
                                      "items": {"type": "array", "items": {"type": "string"}, "minItems": 2}},
     "required": ["s", "n", "items"]},
    {"$defs": {"score": {"enum": ["High", "Medium", "Low"]}}, "type": "object",
     "properties": {"a": {"$ref": "#/$defs/score"}, "b": {"anyOf": [{"type": "null"}, {"type": "string", "minLength": 20}]}}},
])
def test_schema_instances_validate(schema: dict[str, Any]) -> None:
    import jsonschema

    for seed in ("x", "y", "z"):
        jsonschema.validate(schema_instance(schema, seed), schema)


def test_command_line_port_in_use_or_out_of_range_is_one_line_and_exit_2(capsys: Any) -> None:
    import socket

    from coeval_testing.fake_server.__main__ import main

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        for argv in (["--port", str(port)], ["--port", "99999"]):
            with pytest.raises(SystemExit) as exit_info:
                main(argv)
            assert exit_info.value.code == 2, argv
            err = capsys.readouterr().err
            assert "Traceback" not in err and ("--port" in err or str(port) in err), err


def _error_text(err: urllib.error.HTTPError) -> str:
    """Every string in an error body, whatever the provider's error shape."""
    def strings(value: Any) -> list[str]:
        if isinstance(value, dict):
            return [s for v in value.values() for s in strings(v)]
        return [value] if isinstance(value, str) else []

    return " | ".join(strings(json.loads(err.read())))


CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
ANTHROPIC = {"model": "claude-haiku-4-5", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
ANTHROPIC_HEADERS = {"x-api-key": "k", "anthropic-version": "2023-06-01"}


@pytest.mark.parametrize(("path", "body", "headers", "status", "says"), [
    ("/v1/v1/chat/completions", CHAT, BEARER, 404, "Invalid URL (POST /v1/v1/chat/completions)"),
    ("/v1/chat/completions", CHAT, {}, 401, "didn't provide an API key"),
    ("/v1/chat/completions", {"messages": CHAT["messages"]}, BEARER, 400, "'model'"),
    ("/v1/chat/completions", {**CHAT, "max_tokens": 0}, BEARER, 400, "'max_tokens'"),
    ("/openai/deployments/d/chat/completions?api-version=2024-13-01", CHAT, {"api-key": "k"}, 404, "unsupported api-version"),
    ("/openai/deployments/d/chat/completions", CHAT, {"api-key": "k"}, 404, "api-version query parameter is missing"),
    ("/v1/messages", ANTHROPIC, {"x-api-key": "k"}, 400, "anthropic-version: header is required"),
    ("/v1/messages", ANTHROPIC, {"x-api-key": "k", "anthropic-version": "2024-01-01"}, 400, "invalid version"),
    ("/v1/messages", {**ANTHROPIC, "max_output_tokens": 5}, ANTHROPIC_HEADERS, 400, "max_output_tokens: Extra inputs"),
    ("/v1/messages", ANTHROPIC, {"anthropic-version": "2023-06-01"}, 401, "x-api-key header is required"),
    ("/v1beta/models/gemini-2.0-flash:generateContent", {"contents": [{"parts": [{"text": "hi"}]}]}, {}, 403,
     "unregistered callers"),
    ("/v1beta/models/gemini-2.0-flash:generateContent", {"contents": [{"parts": [{"text": "hi"}]}], "config": {}},
     {"x-goog-api-key": "k"}, 400, 'Unknown name "config"'),
    ("/model/m/converse", {"messages": []}, {}, 403, "Missing Authentication Token"),
    ("/v1beta/models/gemini-2.0-flash:batchGenerateContent", {"batch": {"inputConfig": {"requests": {"requests": []}}}},
     {}, 403, "unregistered callers"),
    ("/v1beta/models/gemini-2.0-flash:batchGenerateContent",
     {"batch": {"inputConfig": {"requests": {"requests": [{"request": {"contents": [{"parts": [{"text": "hi"}]}],
                                                                       "maxOutputTokens": 5}}]}}}},
     {"x-goog-api-key": "k"}, 400, 'request 0: Invalid JSON payload received. Unknown name "maxOutputTokens"'),
    ("/v1/messages/batches", {"requests": [{"custom_id": "capitals.r1", "params": ANTHROPIC}]}, ANTHROPIC_HEADERS, 400,
     "requests.0.custom_id: String should match pattern"),
    ("/v1/messages/batches", {"requests": [{"custom_id": "a", "params": ANTHROPIC}] * 2}, ANTHROPIC_HEADERS, 400,
     "duplicate custom_id"),
    ("/v1/messages/batches", {"requests": [{"custom_id": "a", "params": {**ANTHROPIC, "n": 2}}]}, ANTHROPIC_HEADERS, 400,
     "requests.0.params.n: Extra inputs are not permitted"),
])
def test_fake_refuses_what_the_real_api_refuses(fake: Any, path: str, body: Any, headers: dict[str, str], status: int,
                                                says: str) -> None:
    with pytest.raises(urllib.error.HTTPError) as err:
        _post(f"{fake.url}{path}", body, headers)
    assert err.value.code == status
    assert says in _error_text(err.value)


def _upload(fake: Any, line: dict[str, Any], purpose: str) -> Any:
    boundary = "b0undary"
    form = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n{purpose}\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"in.jsonl\"\r\n\r\n"
            f"{json.dumps(line)}\n\r\n--{boundary}--\r\n").encode()
    req = urllib.request.Request(f"{fake.url}/v1/files", data=form, method="POST",
                                 headers={**BEARER, "Content-Type": f"multipart/form-data; boundary={boundary}"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


@pytest.mark.parametrize(("line", "purpose", "endpoint", "says"), [
    ({"custom_id": "a", "method": "POST", "url": "/v1/completions", "body": CHAT}, "batch", "/v1/chat/completions",
     "does not match the batch endpoint"),
    ({"custom_id": "a", "method": "GET", "url": "/v1/chat/completions", "body": CHAT}, "batch", "/v1/chat/completions",
     "method must be POST"),
    ({"method": "POST", "url": "/v1/chat/completions", "body": CHAT}, "batch", "/v1/chat/completions", "custom_id is required"),
    ({"custom_id": "a", "method": "POST", "url": "/v1/chat/completions", "body": CHAT}, "batch", "/chat/completions",
     "endpoint: expected one of"),
    ({"custom_id": "a", "method": "POST", "url": "/v1/chat/completions", "body": CHAT}, "fine-tune", "/v1/chat/completions",
     "not uploaded with purpose 'batch'"),
])
def test_batch_input_is_checked_like_openai_does(fake: Any, line: dict[str, Any], purpose: str, endpoint: str,
                                                 says: str) -> None:
    file_id = _upload(fake, line, purpose)["id"]
    with pytest.raises(urllib.error.HTTPError) as err:
        _post(f"{fake.url}/v1/batches", {"input_file_id": file_id, "endpoint": endpoint, "completion_window": "24h"})
    assert err.value.code == 400
    assert says in _error_text(err.value)


def test_file_purpose_must_be_documented(fake: Any) -> None:
    with pytest.raises(urllib.error.HTTPError) as err:
        _upload(fake, {"x": 1}, "batches")
    assert err.value.code == 400 and "purpose: expected one of" in _error_text(err.value)


@pytest.mark.parametrize(("change", "says"), [
    ({"jobName": "coeval job"}, "jobName"),
    ({"roleArn": "bedrock-batch"}, "roleArn"),
    ({"record": {"recordId": "r1", "modelInput": {"messages": []}}}, "anthropic_version must be bedrock-2023-05-31"),
    ({"record": {"modelInput": {"anthropic_version": "bedrock-2023-05-31"}}}, "recordId missing"),
])
def test_bedrock_job_rules(change: dict[str, Any], says: str) -> None:
    body = {"jobName": "coeval-0123abcd", "roleArn": "arn:aws:iam::123456789012:role/bedrock-batch",
            "modelId": "anthropic.claude-3-haiku-20240307-v1:0"}
    record = {"recordId": "r1", "modelInput": {"anthropic_version": "bedrock-2023-05-31", "messages": []}}
    assert bedrock_job_problem(body, [record]) is None
    problem = bedrock_job_problem({**body, **{k: v for k, v in change.items() if k != "record"}}, [change.get("record", record)])
    assert problem is not None and problem[0] == 400 and says in problem[2]


@pytest.mark.parametrize(("change", "says"), [
    ({"displayName": ""}, "displayName is required"),
    ({"inputConfig": {"instancesFormat": "csv"}}, "instancesFormat must be jsonl"),
    ({"outputConfig": {"predictionsFormat": "bigquery"}}, "predictionsFormat must be jsonl"),
])
def test_vertex_job_rules(change: dict[str, Any], says: str) -> None:
    body = {"displayName": "coeval", "model": "publishers/google/models/gemini-2.0-flash",
            "inputConfig": {"instancesFormat": "jsonl"}, "outputConfig": {"predictionsFormat": "jsonl"}}
    assert vertex_job_problem(body) is None
    problem = vertex_job_problem({**body, **change})
    assert problem is not None and problem[0] == 400 and says in problem[2]
