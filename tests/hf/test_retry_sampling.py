"""On the ``huggingface`` interface a greedy call's retry really samples: its new seed and
temperature give another reply, and the same retry gives the same reply again."""

from __future__ import annotations

import asyncio
from pathlib import Path

from coeval.config.model import ModelConfig
from coeval.interfaces.base import GenerateRequest
from coeval.scheduler.resample import resampled
from coeval_hf.huggingface import HuggingFaceInterface


def test_a_retry_of_a_greedy_call_gets_another_reproducible_reply(tiny_model_dir: Path) -> None:
    params = {"model": str(tiny_model_dir), "device": "cpu", "temperature": 0, "max_tokens": 12}
    iface = HuggingFaceInterface(ModelConfig("tiny", "huggingface", roles=("judge",), parameters=params))
    first = GenerateRequest(prompt="Score this reply.", params=params, role="judge")
    retry = resampled(first, "tiny:e0", 1, takes_seed=iface.takes_seed)

    async def go() -> list[str]:
        try:
            return [(await iface.generate(r)).text for r in (first, first, retry, retry)]
        finally:
            await iface.aclose()

    greedy, greedy_again, sampled, sampled_again = asyncio.run(go())
    assert greedy == greedy_again  # greedy: asking again alone gives the same reply
    assert sampled != greedy
    assert sampled == sampled_again  # the retry's seed is fixed: a resumed run gets the same reply
