"""Constrained decoding on the ``huggingface`` interface: a tiny random model's teacher and
judge replies parse, because every token is masked to keep the output valid JSON."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import jsonschema
import pytest
from coeval.config.model import ModelConfig
from coeval.interfaces.base import GenerateRequest
from coeval.prompts.schemas import DATAPOINT_SCHEMA, judge_single_schema, parse_datapoint
from coeval_hf.huggingface import HuggingFaceInterface


def _reply(folder: Path, schema: dict, max_tokens: int) -> str:
    params = {"model": str(folder), "device": "cpu", "temperature": 0, "max_tokens": max_tokens}
    iface = HuggingFaceInterface(ModelConfig("tiny", "huggingface", roles=("teacher", "judge"), parameters=params))

    async def go() -> str:
        try:
            return (await iface.generate(GenerateRequest(prompt="Write one item.", params=params, json_schema=schema))).text
        finally:
            await iface.aclose()

    return asyncio.run(go())


@pytest.mark.slow
def test_judge_reply_of_a_random_model_is_valid_json_for_the_schema(tiny_model_dir: Path) -> None:
    schema = judge_single_schema(["accuracy", "clarity"])
    text = _reply(tiny_model_dir, schema, 120)
    jsonschema.validate(json.loads(text), schema)


def test_teacher_reply_of_a_random_model_parses_as_a_datapoint(tiny_model_dir: Path) -> None:
    # the schema phase 3 sends, unchanged: the mask's own string cap keeps it within budget
    text = _reply(tiny_model_dir, DATAPOINT_SCHEMA, 120)
    jsonschema.validate(json.loads(text), DATAPOINT_SCHEMA)
    assert set(parse_datapoint(text)) == {"prompt", "response"}
