"""Credentials outside the key fields (request headers, a ``base_url`` with
``user:password@``) never reach a run folder or the console, and drift detection still
sees when they change. A key echoed only in part is masked too."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from coeval.config.credentials import redact, register_secret
from coeval_testing import fake_server

from tests.robustness._support import invoke, no_traceback
from tests.security.capitals_task import capitals_task


@pytest.fixture
def fake() -> Iterator[Any]:
    with fake_server.FakeServer() as server:
        yield server


def _config(url: str, storage: Path, headers: dict[str, str], password: str) -> dict[str, Any]:
    host = url.removeprefix("http://")
    return {
        "models": [
            {"name": "gpt-hdr", "interface": "openai", "roles": ["teacher", "student", "judge"], "access_key": "sk-fake-key-1",
             "parameters": {"model": "gpt-4o-mini", "base_url": f"http://{host}/v1", "max_tokens": 100,
                            "headers": headers}},
            # the SDKs refuse userinfo beside their own key; the setting is still stored and printed
            {"name": "mock-proxy", "interface": "mock", "roles": ["student"],
             "parameters": {"seed": 1, "base_url": f"http://proxyuser:{password}@{host}/v1"}},
        ],
        "tasks": [capitals_task()],
        "experiment": {"id": "hdr", "storage_folder": str(storage), "generation_retries": 0},
    }


def _needles(*values: str) -> list[str]:
    return [v for value in values for v in (value, value[:12], value[-12:])]


def test_header_and_url_credentials_stay_out_of_the_run_folder_and_console(fake: Any, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "COEVAL_KEYS_FILE"):
        monkeypatch.delenv(var, raising=False)
    bearer, api_key, cookie, password = (secrets.token_hex(16) for _ in range(4))
    headers = {"X-Auth-Token": bearer, "X-Api-Key": api_key, "Cookie": f"session={cookie}", "X-Trace": "trace-visible"}
    config_path = tmp_path / "exp.yaml"
    config_path.write_text(yaml.safe_dump(_config(fake.url, tmp_path / "runs", headers, password)), encoding="utf-8")
    outputs = {}
    result = invoke(["run", "--config", str(config_path)])
    no_traceback(result)
    outputs["run"] = result.output
    run = tmp_path / "runs" / "hdr"
    assert result.exit_code == 0, result.output
    assert "trace-visible" in (run / "config.yaml").read_text(encoding="utf-8")  # other headers are kept

    # a changed credential is drift, shown by hash
    new_token = secrets.token_hex(16)
    changed = _config(fake.url, tmp_path / "runs", {**headers, "X-Auth-Token": new_token}, password)
    config_path.write_text(yaml.safe_dump(changed), encoding="utf-8")
    drift = invoke(["run", "--config", str(config_path), "--continue"])
    no_traceback(drift)
    outputs["drift"] = drift.output
    assert drift.exit_code == 2, drift.output
    assert "X-Auth-Token" in drift.output, drift.output
    # ... and so is a changed password in the URL
    moved = _config(fake.url, tmp_path / "runs", headers, secrets.token_hex(16))
    config_path.write_text(yaml.safe_dump(moved), encoding="utf-8")
    drift2 = invoke(["run", "--config", str(config_path), "--continue"])
    outputs["drift2"] = drift2.output
    assert drift2.exit_code == 2 and "base_url" in drift2.output, drift2.output
    allowed = invoke(["run", "--config", str(config_path), "--continue", "--allow-drift"])
    no_traceback(allowed)
    outputs["allowed"] = allowed.output
    for args in (["status", "--run", str(run)], ["repair", "--run", str(run), "--dry-run"]):
        res = invoke(args)
        no_traceback(res)
        outputs[args[0]] = res.output

    leaks = []
    needles = _needles(bearer, api_key, cookie, password, new_token)
    for path in (p for p in run.rglob("*") if p.is_file()):
        data = path.read_bytes()
        leaks += [f"{n} in {path.name}" for n in needles if n.encode() in data]
    for where, text in outputs.items():
        leaks += [f"{n} in the output of {where}" for n in needles if n in text]
    assert not leaks, leaks


def test_a_key_echoed_in_part_is_masked() -> None:
    """A provider that echoes the key up to a ``/`` leaked that prefix."""
    key = "AKIAx" + secrets.token_hex(8) + "/" + secrets.token_hex(10)
    register_secret(key)
    head = key.split("/")[0]
    assert head not in redact(f"invalid credential {head} for this account")
    tail = key.split("/")[1]
    assert tail not in redact(f"signature {tail} does not match")
    assert key[:14] not in redact(f"key starting {key[:14]}... is unknown")
    assert redact("nothing secret here, sk-") == "nothing secret here, sk-"
