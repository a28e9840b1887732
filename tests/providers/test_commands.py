"""``coeval plugins``, ``coeval probe`` and ``coeval models`` with the providers installed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from coeval.cli.main import cli

from tests.providers.conftest import ALL_INTERFACES, BATCH_INTERFACES, SECRET

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_plugins_lists_every_interface_and_batch_runner_of_providers() -> None:
    result = invoke("plugins", "--json")
    assert result.exit_code == 0
    providers = next(p for p in json.loads(result.output) if p["name"] == "providers")
    assert sorted(providers["interfaces"]) == sorted(ALL_INTERFACES)
    assert sorted(providers["batch_runners"]) == sorted(BATCH_INTERFACES)
    assert providers["distribution"].startswith("coeval-providers")


def _config(tmp_path: Path, url: str, *, bad_key: bool = False, on_fail: str = "abort") -> tuple[Path, Path]:
    keys = tmp_path / "keys.yaml"
    keys.write_text(yaml.safe_dump({"providers": {
        "openai": f"rejected-{SECRET}" if bad_key else "sk-good-key-1234",
        "anthropic": "sk-ant-good-key",
    }}))
    cfg = {
        "models": [
            {"name": "gpt", "interface": "openai", "parameters": {"model": "gpt-4o-mini", "base_url": f"{url}/v1"},
             "roles": ["teacher", "student", "judge"]},
            {"name": "claude", "interface": "anthropic", "parameters": {"model": "claude-haiku-4-5", "base_url": url},
             "roles": ["student"]},
        ],
        "tasks": [{"name": "t", "description": "d", "output_description": "o", "target_attributes": {"a": ["x"]},
                   "nuanced_attributes": {"b": ["y"]}, "sampling": {"target": [1, 1], "nuance": [1, 1], "total": 1},
                   "rubric": {"r": "c"}}],
        "experiment": {"id": "probe-test", "storage_folder": str(tmp_path / "runs"), "probe_on_fail": on_fail},
    }
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path, keys


def test_probe_reports_each_model(fake: Any, tmp_path: Path) -> None:
    config, keys = _config(tmp_path, fake.url)
    result = invoke("probe", "--config", str(config), "--keys", str(keys), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert [(r["model"], r["ok"]) for r in report["results"]] == [("gpt", True), ("claude", True)]
    assert fake.counts["openai.chat"] == 1 and fake.counts["anthropic.messages"] == 1


def test_failed_probe_aborts_with_exit_2_and_no_key_in_output(fake: Any, tmp_path: Path) -> None:
    config, keys = _config(tmp_path, fake.url, bad_key=True)
    result = invoke("probe", "--config", str(config), "--keys", str(keys))
    assert result.exit_code == 2
    assert "FAIL" in result.output and "authentication failed" in result.output
    assert SECRET not in result.output
    assert fake.counts["openai.chat"] == 1  # an auth failure is not retried
    warned = invoke("probe", "--config", str(config), "--keys", str(keys), "--probe-on-fail", "warn")
    assert warned.exit_code == 0 and "1 failed" in warned.output


def test_probe_disable_makes_no_call(fake: Any, tmp_path: Path) -> None:
    config, keys = _config(tmp_path, fake.url)
    result = invoke("probe", "--config", str(config), "--keys", str(keys), "--probe", "disable")
    assert result.exit_code == 0
    assert fake.counts == {}


def test_probe_resume_probes_only_models_with_work_left(fake: Any, tmp_path: Path) -> None:
    from coeval.config.credentials import KeyStore
    from coeval.plugins.config_loading import load_config
    from coeval.run.options import RunOptions
    from coeval.run.probe import probe_models
    from coeval.run.runner import run_experiment

    config_path, keys = _config(tmp_path, fake.url)
    config = load_config(config_path, keys_file=str(keys))
    store = KeyStore.load(keys)
    # no run folder yet: resume probes everyone
    assert [r.skipped for r in probe_models(config, store, "resume")] == [False, False]
    done = run_experiment(config, RunOptions(keys_file=str(keys), probe_mode="disable", progress=False))
    assert done.exit_code == 0, done.message
    calls = dict(fake.counts)
    # a finished run: nothing left to do, nobody probed, no call made
    assert [r.skipped for r in probe_models(config, store, "resume")] == [True, True]
    assert dict(fake.counts) == calls


def test_models_lists_each_provider(fake: Any, tmp_path: Path, monkeypatch: Any) -> None:
    keys = tmp_path / "keys.yaml"
    keys.write_text(yaml.safe_dump({"providers": {"openai": "sk-test-key-1", "anthropic": "sk-ant-test-1",
                                                  "gemini": "AIza-test-key"}}))
    monkeypatch.setenv("OPENAI_BASE_URL", f"{fake.url}/v1")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
    result = invoke("models", "--providers", "openai,anthropic,gemini", "--keys", str(keys), "--json")
    assert result.exit_code == 0, result.output
    listed = json.loads(result.output)
    assert "gpt-4o-mini" in [m["id"] for m in listed["openai"]["models"]]
    assert "claude-haiku-4-5" in [m["id"] for m in listed["anthropic"]["models"]]
    gemini = [m["id"] for m in listed["gemini"]["models"]]
    assert "gemini-2.0-flash" in gemini and "text-embedding-004" not in gemini  # text generation only
    verbose = invoke("models", "--providers", "gemini", "--keys", str(keys), "--verbose")
    assert "context_window=1048576" in verbose.output


def test_models_unknown_provider_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["models", "--providers", "nonesuch"])
    assert result.exit_code == 2 and "nonesuch" in result.output


@pytest.mark.slow
def test_sdks_are_imported_only_when_a_client_is_built() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from coeval.plugins.manager import registries\n"
        "from coeval.config.model import ModelConfig\n"
        "r = registries()\n"
        "for name in ('openai', 'anthropic', 'gemini', 'bedrock'):\n"
        "    r.interfaces.get(name)(ModelConfig(name='m', interface=name, parameters={'model': 'x'}), None)\n"
        "print(sorted(m for m in ('openai', 'anthropic', 'boto3', 'google.genai') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
