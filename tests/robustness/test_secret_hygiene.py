"""Keys never reach what CoEval writes or prints.

A run through the real provider SDKs against the local fake server, with keys from every
source (a key file, the environment, ``access_key`` in the config), some of them rejected
by the server with a 401 whose body echoes the whole key back (as real providers echo part
of it), plus rate limits, server errors and malformed replies on the valid keys. Then every
file under the run folder (records, ``meta.json``, the config snapshot, ``run.log``), the
analysis report, and the console output of ``run``, ``status``, ``repair`` and ``analyze``
are searched for the keys.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from coeval_testing import fake_server

from ._support import invoke, no_traceback

#: a whole run through the SDKs and a fake server, then every file and output searched for the keys
pytestmark = pytest.mark.slow


def _key(prefix: str) -> str:
    return f"{prefix}{secrets.token_hex(12)}"


@pytest.fixture
def fake() -> Iterator[object]:
    with fake_server.FakeServer() as server:
        yield server


def test_no_key_appears_in_any_output(fake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    keys = {
        "keyfile_openai": _key("sk-keyfile-"),
        "env_anthropic": _key("sk-ant-env-"),
        "access_rejected": _key("rejected-access-"),
        "env_rejected": _key("rejected-env-"),
    }
    url = fake.url  # type: ignore[attr-defined]
    keys_file = tmp_path / "keys.yaml"
    keys_file.write_text(yaml.safe_dump({"providers": {"openai": keys["keyfile_openai"]}}), encoding="utf-8")
    monkeypatch.setenv("ANTHROPIC_API_KEY", keys["env_anthropic"])
    monkeypatch.setenv("DEEPSEEK_API_KEY", keys["env_rejected"])
    for var in ("OPENAI_API_KEY", "COEVAL_KEYS_FILE"):
        monkeypatch.delenv(var, raising=False)

    config = {
        "models": [
            {"name": "gpt-kf", "interface": "openai", "roles": ["teacher", "student", "judge"],
             "parameters": {"model": "gpt-4o-mini", "base_url": f"{url}/v1", "max_tokens": 100}},
            {"name": "claude-env", "interface": "anthropic", "roles": ["student", "judge"],
             "parameters": {"model": "claude-haiku-4-5", "base_url": url, "max_tokens": 100}},
            {"name": "bad-access", "interface": "openai", "roles": ["student"], "access_key": keys["access_rejected"],
             "parameters": {"model": "gpt-4o-mini", "base_url": f"{url}/v1", "max_tokens": 100}},
            {"name": "bad-env", "interface": "deepseek", "roles": ["judge"],
             "parameters": {"model": "deepseek-chat", "base_url": f"{url}/v1", "max_tokens": 100}},
        ],
        "tasks": [{
            "name": "capitals",
            "description": "Answer a question about the capital city of a country.",
            "output_description": "One sentence naming the capital.",
            "target_attributes": {"continent": ["europe", "asia"]},
            "sampling": {"target": [1, 1], "nuance": [0, 0], "total": 3},
            "rubric": {"correctness": "The capital named is right.", "clarity": "The sentence is clear."},
        }],
        "experiment": {"id": "hygiene", "storage_folder": str(tmp_path / "runs"), "probe_mode": "full",
                       "probe_on_fail": "warn", "generation_retries": 1},
    }
    config_path = tmp_path / "exp.yaml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    # valid keys meet faults too: every error path gets a chance to carry a key
    faults = [{"kind": "429", "retry_after": "0.01"}, {"kind": "500"}, {"kind": "malformed"}, {"kind": "shape"},
              {"kind": "503"}, {"kind": "400"}]
    fake.push_faults("*", faults * 2)  # type: ignore[attr-defined]

    outputs: dict[str, str] = {}
    result = invoke(["run", "--config", str(config_path), "--keys", str(keys_file)])
    no_traceback(result)
    outputs["run"] = result.output
    run = tmp_path / "runs" / "hygiene"
    assert (run / "meta.json").is_file(), result.output
    assert result.exit_code == 1, result.output  # the rejected keys' items failed

    # the failures really happened and really carried the keys: the server echoed them
    evaluations = "\n".join(p.read_text(encoding="utf-8") for p in (run / "phase5_evaluations").glob("*.jsonl"))
    responses = "\n".join(p.read_text(encoding="utf-8") for p in (run / "phase4_responses").glob("*.jsonl"))
    assert "Incorrect API key provided" in responses and "Incorrect API key provided" in evaluations

    for args in (["status", "--run", str(run)], ["repair", "--run", str(run), "--dry-run"],
                 ["analyze", "--run", str(run), "--out", str(tmp_path / "report"), "--bootstrap", "20", "--quiet"]):
        res = invoke(args)
        no_traceback(res)
        outputs[args[0]] = res.output
    assert (tmp_path / "report").is_dir()

    leaks = []
    files = [p for p in (*run.rglob("*"), *(tmp_path / "report").rglob("*")) if p.is_file()]
    assert any(p.name == "run.log" for p in files) and any(p.name == "config.yaml" for p in files)
    for name, key in keys.items():
        needles = (key, key.rsplit("-", 1)[-1])  # the whole key, and its random part alone
        for path in files:
            data = path.read_bytes()
            if any(n.encode() in data for n in needles):
                leaks.append(f"{name} in {path.relative_to(tmp_path)}")
        for where, text in outputs.items():
            if any(n in text for n in needles):
                leaks.append(f"{name} in the output of `coeval {where}`")
    assert not leaks, leaks
