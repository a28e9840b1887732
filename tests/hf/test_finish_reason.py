"""Why a local model stopped, as ``coeval serve`` and in-process runs report it: ``"length"``
when ``max_tokens`` cut the reply, ``"stop"`` when the model ended it (tiny model, CPU)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from coeval.interfaces.base import GenerateResult
from coeval_hf._ray_replica import ServedModel
from coeval_hf.llamacpp import parse_reply

from tests.hf.tiny_model import build_tiny_model


def served(folder: Path) -> ServedModel:
    """The replica ``coeval serve`` deploys, built outside Ray on the tiny model."""
    return ServedModel({"name": "tiny", "interface": "huggingface",
                        "parameters": {"model": str(folder), "device": "cpu", "temperature": 0, "max_tokens": 64}})


def ask(model: ServedModel, **body: Any) -> dict[str, Any]:
    """One chat-completions call; then the model is closed, so its slot leaves the shared host."""

    async def answer_and_close() -> tuple[int, dict[str, Any]]:
        try:
            return await model.answer({"messages": [{"role": "user", "content": "Hello"}], **body})
        finally:
            await model.iface.aclose()

    status, reply = asyncio.run(answer_and_close())
    assert status == 200, reply
    return reply


@pytest.fixture(scope="module")
def ends_at_once_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model with every token an end-of-sequence token: each reply ends after one token."""
    folder = build_tiny_model(tmp_path_factory.mktemp("tiny-ends-at-once"))
    config_file = folder / "generation_config.json"
    config = json.loads(config_file.read_text(encoding="utf-8"))
    vocab = json.loads((folder / "config.json").read_text(encoding="utf-8"))["vocab_size"]
    config["eos_token_id"] = list(range(vocab))
    config_file.write_text(json.dumps(config), encoding="utf-8")
    return folder


def test_a_reply_cut_at_max_tokens_is_served_with_finish_reason_length(tiny_model_dir: Path) -> None:
    reply = ask(served(tiny_model_dir), max_tokens=3)
    assert reply["choices"][0]["finish_reason"] == "length"
    assert reply["usage"]["completion_tokens"] == 3


def test_a_reply_the_model_ended_is_served_with_finish_reason_stop(ends_at_once_dir: Path) -> None:
    reply = ask(served(ends_at_once_dir), max_tokens=3)
    assert reply["choices"][0]["finish_reason"] == "stop"
    assert reply["usage"]["completion_tokens"] == 1


def test_llamacpp_replies_keep_the_engines_finish_reason() -> None:
    def reply(reason: str | None) -> dict[str, Any]:
        return {"choices": [{"index": 0, "finish_reason": reason, "message": {"content": "Paris is"}}],
                "usage": {"prompt_tokens": 9, "completion_tokens": 2}}

    results = [parse_reply(reply(r), "smol") for r in ("length", "stop", None)]
    assert [r.finish_reason if isinstance(r, GenerateResult) else r for r in results] == ["length", "stop", None]
