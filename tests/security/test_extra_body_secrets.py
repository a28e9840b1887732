"""Credentials inside a model's ``parameters.extra_body`` (any depth) never reach the run
folder: ``config.yaml`` and ``meta.json`` keep a mask (``***#`` and a short hash), the
console never shows them, and the request still carries the real value."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from coeval.config.secret_settings import mask
from coeval.interfaces.base import GenerateRequest
from coeval.plugins.config_loading import load_config
from coeval.run.drift import settings_of
from coeval.storage.snapshot import config_to_mapping
from coeval_testing import fake_server

from tests.robustness._support import invoke, no_traceback
from tests.security.capitals_task import capitals_task


@pytest.fixture
def fake() -> Iterator[Any]:
    with fake_server.FakeServer() as server:
        yield server


def _config(url: str, storage: Path, extra_body: dict[str, Any]) -> dict[str, Any]:
    host = url.removeprefix("http://")
    return {
        "models": [{"name": "gpt-x", "interface": "openai", "roles": ["teacher", "student", "judge"],
                    "access_key": "sk-fake-key-1",
                    "parameters": {"model": "gpt-4o-mini", "base_url": f"http://{host}/v1", "max_tokens": 100,
                                   "extra_body": extra_body}}],
        "tasks": [capitals_task()],
        "experiment": {"id": "xb", "storage_folder": str(storage), "generation_retries": 0},
    }


def _extra_body() -> tuple[dict[str, Any], list[str]]:
    api_key, session, password, bearer = (secrets.token_hex(16) for _ in range(4))
    body = {"api_key": api_key, "session_token": session, "options": {"auth": {"password": password}},
            "providers": [{"name": "a", "accessToken": bearer}], "max_tokens_hint": 7, "cache_prompt": True}
    return body, [api_key, session, password, bearer]


@pytest.mark.slow  # a run against the fake server
def test_extra_body_credentials_stay_out_of_the_run_folder(fake: Any, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "COEVAL_KEYS_FILE"):
        monkeypatch.delenv(var, raising=False)
    extra, values = _extra_body()
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(_config(fake.url, tmp_path / "runs", extra)), encoding="utf-8")
    outputs = {}
    result = invoke(["run", "--config", str(path)])
    no_traceback(result)
    assert result.exit_code == 0, result.output
    outputs["run"] = result.output
    run = tmp_path / "runs" / "xb"
    for args in (["status", "--run", str(run)], ["run", "--config", str(path), "--continue"]):
        res = invoke(args)
        no_traceback(res)
        outputs[" ".join(args[:2])] = res.output
    assert outputs["run --config"].count("drift") == 0, outputs["run --config"]  # a mask is stable

    snapshot = yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8"))
    stored = snapshot["models"][0]["parameters"]["extra_body"]
    assert stored == {"api_key": mask(values[0]), "session_token": mask(values[1]),
                      "options": {"auth": {"password": mask(values[2])}},
                      "providers": [{"name": "a", "accessToken": mask(values[3])}],
                      "max_tokens_hint": 7, "cache_prompt": True}
    leaks = []
    needles = [v for value in values for v in (value, value[:12], value[-12:])]
    for file in (p for p in run.rglob("*") if p.is_file()):
        data = file.read_bytes()
        leaks += [f"{n} in {file.name}" for n in needles if n.encode() in data]
    for where, text in outputs.items():
        leaks += [f"{n} in the output of {where}" for n in needles if n in text]
    assert not leaks, leaks


def test_the_request_still_sends_the_real_values(tmp_path: Path) -> None:
    from coeval.plugins.manager import registries

    extra, values = _extra_body()
    config = load_config(_config("http://127.0.0.1:9", tmp_path, extra), check_filesystem=False)
    config_to_mapping(config)  # what the run folder gets, worked out first: it must not change the config
    settings_of(config)
    model = config.models[0]
    iface = registries().interfaces.get("openai")(model, None)
    body = iface.build_body(GenerateRequest(prompt="x", params=model.params_for("student")))
    assert body["api_key"] == values[0] and body["session_token"] == values[1]
    assert body["options"] == {"auth": {"password": values[2]}}
    assert body["providers"] == [{"name": "a", "accessToken": values[3]}]
