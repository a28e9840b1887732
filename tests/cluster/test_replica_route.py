"""The replica's route speaks what CoEval's ``vllm`` client sends, and application names
follow the settings that matter (no Ray needed)."""

from __future__ import annotations

from coeval.config.cluster_block import read_cluster
from coeval.config.model import ModelConfig
from coeval.interfaces.base import GenerateRequest, GenerateResult, Usage
from coeval_hf._ray_replica import completion_body, request_from_body
from coeval_hf.ray_serving import app_name
from coeval_providers.interfaces.openai_compat import VLLMInterface, parse_chat_completion


def test_a_request_survives_the_trip_through_the_vllm_body() -> None:
    client = VLLMInterface(ModelConfig(name="smol", interface="vllm", parameters={"base_url": "http://x/v1"}))
    schema = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}
    sent = GenerateRequest(prompt="Grade this.", system="You are a judge.", json_schema=schema, schema_name="grade",
                           params={"temperature": 0.0, "max_tokens": 40, "top_k": 5, "seed": 3,
                                   "repetition_penalty": 1.15})
    got = request_from_body(client.build_body(sent), {"model": "smollm2-135m", "n_ctx": 2048, "max_tokens": 512})
    assert (got.prompt, got.system, got.json_schema, got.schema_name) == ("Grade this.", "You are a judge.", schema, "grade")
    assert got.params == {"model": "smollm2-135m", "n_ctx": 2048, "temperature": 0.0, "max_tokens": 40, "top_k": 5,
                          "seed": 3, "repetition_penalty": 1.15}


def test_the_reply_parses_as_a_chat_completion_naming_the_replica() -> None:
    body = completion_body(GenerateResult(text="4", usage=Usage(12, 1), finish_reason="length"), "smol", "r-1")
    assert parse_chat_completion("vllm", body) == ("4", 12, 1, "smol", "length")
    assert body["system_fingerprint"] == "r-1"


def test_the_application_name_follows_weights_and_resources_not_keep_serving() -> None:
    model = {"name": "smol", "interface": "llamacpp", "parameters": {"model": "smollm2-135m"}}
    base = app_name(model, read_cluster({"replicas": 2}, "llamacpp"))
    assert base.startswith("coeval-smol-") and len(base) == len("coeval-smol-") + 8
    assert app_name(model, read_cluster({"replicas": 2, "keep_serving": True}, "llamacpp")) == base
    assert app_name(model, read_cluster({"replicas": 3}, "llamacpp")) != base
    other = {**model, "parameters": {"model": "smollm2-135m", "n_ctx": 1024}}
    assert app_name(other, read_cluster({"replicas": 2}, "llamacpp")) != base
