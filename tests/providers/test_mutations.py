"""Mutation check: each deliberate fault below, applied to a copy of the provider adapters, makes
at least one provider test fail. If a fault goes unnoticed the fakes or the tests have become
too lenient to catch that class of adapter bug.

Each mutant runs a few targeted provider tests in a child process with the mutated copy of
``coeval_providers`` first on ``PYTHONPATH``; an unmutated copy must pass the same tests, so a
"kill" is never a broken harness. ``nox -s mutants`` runs this file alone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "coeval-providers" / "src" / "coeval_providers"

pytestmark = [pytest.mark.mutants, pytest.mark.slow]


@attrs.frozen
class Mutant:
    """One fault: replace ``old`` (which must occur exactly once) by ``new`` in ``path``."""

    name: str
    path: str  # relative to coeval_providers/
    old: str
    new: str
    tests: tuple[str, ...]


def _exact(name: str) -> tuple[str, ...]:
    return (f"tests/providers/test_interfaces.py::test_call_records_exact_usage_and_cost[{name}]",)


MUTANTS = (
    Mutant("doubled path", "interfaces/openai_compat.py",
           'chat_path = "/chat/completions"', 'chat_path = "/v1/chat/completions"',
           _exact("openai")),
    Mutant("wrong batch endpoint", "batch/openai.py",
           'endpoint = "/v1/chat/completions"', 'endpoint = "/v1/completions"',
           ("tests/providers/test_batch_runners.py::test_batch_price_is_discounted[openai]",)),
    Mutant("wrong batch endpoint, Azure OpenAI", "batch/openai.py",
           'endpoint = "/chat/completions"', 'endpoint = "/v1/chat/completions"',
           ("tests/providers/test_batch_runners.py::test_batch_price_is_discounted[azure_openai]",)),
    Mutant("swapped tokens, OpenAI-compatible", "interfaces/openai_compat.py",
           'int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)',
           'int(usage.get("completion_tokens") or 0), int(usage.get("prompt_tokens") or 0)',
           _exact("mistral")),
    Mutant("swapped tokens, Anthropic", "interfaces/anthropic.py",
           'return "".join(parts), tokens_in, tokens_out, get(message, "model")',
           'return "".join(parts), tokens_out, tokens_in, get(message, "model")',
           _exact("anthropic")),
    Mutant("swapped tokens, Gemini", "interfaces/gemini.py",
           "return text, tokens_in, tokens_out, _get(", "return text, tokens_out, tokens_in, _get(",
           _exact("gemini")),
    Mutant("swapped tokens, Bedrock", "interfaces/bedrock.py",
           'int(usage.get("inputTokens") or 0), int(usage.get("outputTokens") or 0)\n',
           'int(usage.get("outputTokens") or 0), int(usage.get("inputTokens") or 0)\n',
           _exact("bedrock")),
    Mutant("dropped auth header", "interfaces/openai_compat.py",
           "headers = {**self.extra_headers, ", 'headers = {"Authorization": "", **self.extra_headers, ',
           _exact("groq")),
    Mutant("wrong API version header, Anthropic", "interfaces/anthropic.py",
           'kwargs["default_headers"] = {"anthropic-version": str(self.api_version)}',
           'kwargs["default_headers"] = {"anthropic-version": "2023-06-10"}',
           ("tests/providers/test_interfaces.py::test_anthropic_sampling_parameters_need_the_older_api_version",)),
    Mutant("wrong API version, Azure OpenAI", "interfaces/azure_openai.py",
           'DEFAULT_API_VERSION = "2024-10-21"', 'DEFAULT_API_VERSION = "2024-10-12"',
           ("tests/providers/test_default_base_urls.py::test_default_base_url_reaches_the_real_path[azure_openai]",)),
)


def _copy_with(tmp_path: Path, mutant: Mutant | None) -> Path:
    """A copy of ``coeval_providers`` under ``tmp_path``, with ``mutant`` applied."""
    root = tmp_path / "src"
    shutil.copytree(PACKAGE, root / "coeval_providers", ignore=shutil.ignore_patterns("__pycache__"))
    if mutant is not None:
        target = root / "coeval_providers" / mutant.path
        source = target.read_text(encoding="utf-8")
        assert source.count(mutant.old) == 1, f"{mutant.name}: the text to change is not in {mutant.path} exactly once"
        target.write_text(source.replace(mutant.old, mutant.new), encoding="utf-8")
    return root


def _run_tests(src: Path, tests: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), str(REPO), os.environ.get("PYTHONPATH", "")]),
           "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests]
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def _selected(result: subprocess.CompletedProcess[str]) -> str:
    return result.stdout[-2000:] + result.stderr[-2000:]


@pytest.fixture(scope="module")
def clean_copy_passes(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every test the mutants rely on passes on an unmutated copy, through the same harness."""
    tests = sorted({t for m in MUTANTS for t in m.tests})
    baseline = _run_tests(_copy_with(tmp_path_factory.mktemp("clean"), None), tuple(tests))
    assert baseline.returncode == 0, f"the unmutated adapters fail:\n{_selected(baseline)}"
    assert f"{len(tests)} passed" in baseline.stdout, _selected(baseline)


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_mutant_is_caught(mutant: Mutant, tmp_path: Path, clean_copy_passes: None) -> None:
    mutated = _run_tests(_copy_with(tmp_path / "mutant", mutant), mutant.tests)
    assert mutated.returncode == 1, f"no provider test failed with the fault '{mutant.name}':\n{_selected(mutated)}"
    assert " failed" in mutated.stdout
