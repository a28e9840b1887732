"""The documented first-hour helpers work as documented: shell completion and the mock's
parameters (docs/running.md)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from coeval.config.model import ModelConfig
from coeval.interfaces.base import GenerateRequest, RateLimitError
from coeval.interfaces.mock import MockInterface

RUNNING = Path(__file__).resolve().parents[2] / "docs" / "running.md"
MOCK_SOURCE = Path(__file__).resolve().parents[2] / "coeval-core" / "src" / "coeval" / "interfaces" / "mock.py"
MOCK_DESIGN_SOURCE = MOCK_SOURCE.with_name("mock_design.py")


def section(title: str) -> str:
    text = RUNNING.read_text(encoding="utf-8")
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start:end]


def coeval(env: dict[str, str]) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "coeval"], env={**os.environ, **env}, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize(
    ("shell", "marker"),
    [
        ("bash", "complete -o nosort -F _coeval_completion coeval"),
        ("zsh", "#compdef coeval"),
        ("fish", "complete --no-files --command coeval"),
    ],
)
def test_the_documented_completion_command_prints_a_script(shell: str, marker: str) -> None:
    assert f"_COEVAL_COMPLETE={shell}_source coeval" in section("Shell completion")
    script = coeval({"_COEVAL_COMPLETE": f"{shell}_source"})
    assert marker in script and "_coeval_completion" in script


@pytest.mark.slow
def test_the_completion_script_completes_commands_and_options() -> None:
    def complete(words: str, cword: int) -> list[str]:
        out = coeval({"_COEVAL_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(cword)})
        return out.splitlines()

    assert complete("coeval ke", 1) == ["plain,keys"]
    assert complete("coeval keys l", 2) == ["plain,list"]
    assert complete("coeval status --qu", 2) == ["plain,--quiet"]


def test_the_mock_table_lists_exactly_the_parameters_the_mock_reads() -> None:
    documented = re.findall(r"^\| `(\w+)` \|", section("The `mock` interface"), re.M)
    source = MOCK_SOURCE.read_text(encoding="utf-8") + MOCK_DESIGN_SOURCE.read_text(encoding="utf-8")
    read = set(re.findall(r'params\.get\("(\w+)"', source)) | set(re.findall(r'_number\(params, "(\w+)"', source))
    read |= set(re.findall(r'model\.parameters\.get\("(\w+)"', source))
    assert sorted(documented) == sorted(read - {"record"})  # record: a test hook, not a user setting
    assert documented[:2] == ["seed", "latency_ms"]


def test_the_documented_mock_example_behaves_as_described() -> None:
    block = re.search(r"```yaml\n(.*?)```", section("The `mock` interface"), re.S)
    assert block is not None
    model = yaml.safe_load(block.group(1))["models"][0]
    iface = MockInterface(ModelConfig(name=model["name"], interface="mock", roles=("judge",),
                                      parameters=model["parameters"]))

    def ask(prompt: str) -> str:
        request = GenerateRequest(prompt=prompt, params=iface.model.parameters)
        return asyncio.run(iface.generate(request)).text

    assert ask("What is the capital of France?") == '{"correctness": "High"}'
    with pytest.raises(RateLimitError) as limited:
        ask("capital of France, again")
    assert limited.value.retry_after == 1
