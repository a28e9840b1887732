"""Model families: configured, or inferred from the model id."""

from __future__ import annotations

import pytest
from coeval_analysis.ranking.families import infer_family, model_families


@pytest.mark.parametrize(
    ("model_id", "family"),
    [
        ("gpt-4o-mini", "openai"),
        ("o1-preview", "openai"),
        ("o3-mini", "openai"),
        ("claude-3-5-haiku-latest", "anthropic"),
        ("anthropic.claude-3-haiku-20240307-v1:0", "anthropic"),
        ("gemini-1.5-flash", "google"),
        ("google/gemma-2-2b-it", "google"),
        ("meta-llama/Llama-3.1-8B-Instruct", "meta"),
        ("llama3:8b", "meta"),
        ("Qwen/Qwen2.5-0.5B-Instruct", "qwen"),
        ("mistral-small-latest", "mistral"),
        ("mixtral-8x7b", "mistral"),
        ("HuggingFaceTB/SmolLM2-1.7B-Instruct", "huggingface"),
        ("my-own-model", "my-own-model"),
    ],
)
def test_inferred_family(model_id: str, family: str) -> None:
    assert infer_family(model_id) == family


def test_configured_family_wins_and_model_id_beats_the_name() -> None:
    config = {
        "models": [
            {"name": "a", "interface": "openai", "parameters": {"model": "gpt-4o"}},
            {"name": "gpt-lookalike", "interface": "mock", "family": "house"},
            {"name": "qwen2p5-0b5", "interface": "huggingface", "parameters": {"model": "/models/local"}},
        ]
    }
    got = model_families(config, ["a", "gpt-lookalike", "qwen2p5-0b5", "not-in-config"])
    assert got == {
        "a": "openai",
        "gpt-lookalike": "house",
        "qwen2p5-0b5": "qwen",  # a local path says nothing: the name does
        "not-in-config": "not-in-config",
    }
