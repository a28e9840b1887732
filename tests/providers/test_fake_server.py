"""The fake provider server as a process and through its control API."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from typing import Any

import pytest
from coeval_providers.fake_server import schema_instance


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
    proc = subprocess.Popen([sys.executable, "-m", "coeval_providers.fake_server", "--port", "0", "--latency-ms", "5"],
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

    from coeval_providers.fake_server.__main__ import main

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
