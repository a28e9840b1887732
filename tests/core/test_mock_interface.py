"""The offline ``mock`` interface: valid, deterministic answers; faults; scripts; quality."""

from __future__ import annotations

import asyncio
import json
import statistics
import time

import jsonschema
import pytest
from coeval.config.model import ModelConfig
from coeval.interfaces.base import (
    FatalModelError,
    GenerateRequest,
    MalformedResponseError,
    RateLimitError,
    TransientModelError,
)
from coeval.interfaces.mock import MockInterface, MockParameterError
from coeval.plugins.manager import registries

SCORES = ["High", "Medium", "Low"]


def mock(name: str = "m", **parameters) -> MockInterface:
    return MockInterface(ModelConfig(name=name, interface="mock", roles=("teacher", "student", "judge"),
                                     parameters=parameters))


def call(iface: MockInterface, prompt: str, **kw):
    return asyncio.run(iface.generate(GenerateRequest(prompt=prompt, params=iface.model.parameters, **kw)))


def test_mock_is_registered_by_the_core_plugin():
    assert registries().interfaces.get("mock") is MockInterface


SCHEMAS = {
    "target_attributes": {
        "type": "object",
        "additionalProperties": {"type": "array", "items": {"type": "string"}, "minItems": 2},
        "minProperties": 1,
    },
    "nuanced_attributes": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
    "rubric": {"type": "object", "additionalProperties": {"type": "string", "minLength": 10}, "minProperties": 2},
    "datapoint": {
        "type": "object",
        "properties": {"prompt": {"type": "string", "minLength": 1}, "reference_response": {"type": "string", "minLength": 1}},
        "required": ["prompt", "reference_response"],
        "additionalProperties": False,
    },
    "judge_single": {
        "type": "object",
        "properties": {f: {"type": "string", "enum": SCORES} for f in ("accuracy", "clarity", "tone")},
        "required": ["accuracy", "clarity", "tone"],
        "additionalProperties": False,
    },
    "judge_factor": {
        "type": "object",
        "properties": {"score": {"enum": SCORES}, "reason": {"type": "string", "maxLength": 40}},
        "required": ["score"],
        "additionalProperties": False,
    },
}


@pytest.mark.parametrize("schema_name", sorted(SCHEMAS))
def test_replies_are_valid_instances_of_the_requested_schema(schema_name):
    iface = mock()
    for i in range(20):
        result = call(iface, f"Task {i}: summarise articles about volcanoes", json_schema=SCHEMAS[schema_name],
                      schema_name=schema_name)
        jsonschema.validate(json.loads(result.text), SCHEMAS[schema_name])


def test_attribute_maps_rubrics_and_datapoints_look_like_the_real_thing():
    iface = mock()
    attrs = json.loads(call(iface, "map attributes for volcano summaries", json_schema=SCHEMAS["target_attributes"],
                            schema_name="target_attributes").text)
    assert 2 <= len(attrs) <= 4
    assert all(len(values) >= 2 and len(set(values)) == len(values) for values in attrs.values())
    rubric = json.loads(call(iface, "rubric for volcano summaries", json_schema=SCHEMAS["rubric"],
                             schema_name="rubric").text)
    assert all(name.isidentifier() and text.endswith(".") for name, text in rubric.items())
    dp = json.loads(call(iface, "Write a datapoint about volcanoes", json_schema=SCHEMAS["datapoint"],
                         schema_name="datapoint").text)
    assert "volcanoes" in dp["prompt"].lower() and dp["reference_response"] != dp["prompt"]


def test_a_named_schema_without_a_schema_still_gets_its_shape():
    # a phase that names its reply shape but cannot send a schema still gets usable JSON
    dp = json.loads(call(mock(), "Write a datapoint", schema_name="datapoint").text)
    assert set(dp) == {"prompt", "reference_response"}
    assert call(mock(), "Score this answer", schema_name="judge_factor").text in SCORES


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"n": {"type": "integer", "minimum": 3, "maximum": 5},
                                          "x": {"type": "number", "exclusiveMinimum": 0, "maximum": 0.5},
                                          "flag": {"type": "boolean"}, "nothing": {"type": "null"}},
         "required": ["n", "x", "flag", "nothing"]},
        {"$defs": {"item": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}},
         "type": "array", "items": {"$ref": "#/$defs/item"}, "minItems": 4, "maxItems": 6},
        {"type": "object", "properties": {"choice": {"anyOf": [{"type": "null"}, {"type": "string", "enum": ["a", "b"]}]},
                                          "fixed": {"const": 42}, "tags": {"type": "array", "items": {"type": "string"},
                                                                           "uniqueItems": True, "minItems": 5}},
         "required": ["choice", "fixed", "tags"]},
        {"type": ["string", "null"], "minLength": 50, "maxLength": 60},
        {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                   {"properties": {"b": {"type": "integer", "maximum": -3}}, "required": ["b"]}]},
        {"type": "object", "additionalProperties": False, "minProperties": 0},
    ],
)
def test_generic_schemas_produce_valid_instances(schema):
    iface = mock()
    for i in range(5):
        jsonschema.validate(json.loads(call(iface, f"prompt {i}", json_schema=schema).text), schema)


def test_answers_are_deterministic_per_prompt_model_and_seed():
    a, b = mock(seed=1), mock(seed=1)
    req = {"json_schema": SCHEMAS["datapoint"], "schema_name": "datapoint"}
    assert call(a, "same prompt", **req).text == call(b, "same prompt", **req).text
    assert call(a, "same prompt", **req).text == call(a, "same prompt", **req).text  # repeats too
    assert call(a, "same prompt", **req).text != call(mock(seed=2), "same prompt", **req).text
    assert call(a, "same prompt", **req).text != call(a, "another prompt", **req).text
    assert call(mock("x"), "q", role="student").text != call(mock("y"), "q", role="student").text


def test_usage_is_estimated_from_text_length():
    result = call(mock(), "x" * 400, role="student")
    assert result.usage.input_tokens == 100
    assert result.usage.output_tokens == len(result.text) // 4 > 0
    assert result.cost_usd == 0.0  # free, and a record says so
    assert result.finish_reason == "stop"
    priced = call(mock(cost_per_call_usd=0.01, cost_per_1k_tokens_usd=1.0), "x" * 400)
    assert priced.cost_usd == pytest.approx(0.01 + (100 + priced.usage.output_tokens) / 1000)


def _outcomes(iface: MockInterface, prompts, schema=None):
    async def go():
        out = []
        for p in prompts:
            try:
                r = await iface.generate(GenerateRequest(prompt=p, params=iface.model.parameters, json_schema=schema))
                out.append(r.text)
            except (RateLimitError, TransientModelError) as exc:
                out.append(type(exc).__name__)
        return out

    return asyncio.run(go())


@pytest.mark.slow
def test_fault_injection_is_deterministic_and_close_to_the_rates():
    params = {"failure_rate": 0.2, "rate_limit_rate": 0.1, "malformed_rate": 0.1, "seed": 7}
    prompts = [f"item {i}" for i in range(2000)]
    schema = SCHEMAS["judge_factor"]
    first = _outcomes(mock(**params), prompts, schema)
    assert first == _outcomes(mock(**params), prompts, schema)  # same seed, same faults
    assert first != _outcomes(mock(**{**params, "seed": 8}), prompts, schema)
    share = {kind: first.count(kind) / len(first) for kind in ("TransientModelError", "RateLimitError")}
    assert 0.16 < share["TransientModelError"] < 0.24
    assert 0.07 < share["RateLimitError"] < 0.13
    bad = 0
    for text in first:
        if text.endswith("Error"):
            continue
        try:
            jsonschema.validate(json.loads(text), schema)
        except (ValueError, jsonschema.ValidationError):
            bad += 1
    assert 0.07 < bad / len(first) < 0.13


def test_injected_faults_never_block_a_prompt_for_good():
    iface = mock(failure_rate=0.9, seed=1)  # nine calls in ten fail
    for i in range(50):
        texts = _outcomes(iface, [f"p{i}"] * 12)
        # at most max_faults_in_a_row (2) faults in a row
        assert "TransientModelError" * 3 not in "".join(t if t.endswith("Error") else "|" for t in texts)
        assert texts.count("TransientModelError") >= 6  # yet most calls still fail
    stubborn = mock(failure_rate=1.0, max_faults_in_a_row=1000)
    assert _outcomes(stubborn, ["p"] * 5) == ["TransientModelError"] * 5


def test_rate_limits_carry_retry_after():
    iface = mock(rate_limit_rate=1.0, retry_after_s=1.5, max_faults_in_a_row=5)
    with pytest.raises(RateLimitError) as info:
        call(iface, "p")
    assert info.value.retry_after == 1.5


def test_malformed_replies_only_for_structured_requests():
    iface = mock(malformed_rate=1.0, max_faults_in_a_row=5)
    assert call(iface, "answer me", role="student").text == call(mock(), "answer me", role="student").text
    with pytest.raises(ValueError):
        jsonschema.validate(json.loads(call(iface, "score", json_schema=SCHEMAS["judge_single"]).text), SCHEMAS["judge_single"])


def test_scripted_replies_in_order_then_generated():
    iface = mock(replies=["first", {"a": 1}, {"mock_error": "rate_limit", "retry_after": 2}])
    assert call(iface, "x").text == "first"
    assert json.loads(call(iface, "x").text) == {"a": 1}
    with pytest.raises(RateLimitError) as info:
        call(iface, "x")
    assert info.value.retry_after == 2
    assert call(iface, "x", role="student").text  # script used up: generated answers again


def test_scripted_replies_by_prompt_substring():
    iface = mock(replies={"judge": [{"mock_error": "transient"}, "High"], "fatal": {"mock_error": "fatal"},
                          "broken": {"mock_error": "malformed"}})
    with pytest.raises(TransientModelError):
        call(iface, "you are a judge")
    assert call(iface, "you are a judge").text == "High"
    with pytest.raises(FatalModelError):
        call(iface, "a fatal prompt")
    with pytest.raises(MalformedResponseError):
        call(iface, "broken reply")
    assert call(iface, "other").text != "High"


def test_latency_is_applied():
    iface = mock(latency_ms=30)
    start = time.perf_counter()
    call(iface, "p")
    assert time.perf_counter() - start >= 0.03


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"failure_rate": 1.5}, "'failure_rate' must be a number from 0 to 1"),
        ({"latency_ms": "slow"}, "'latency_ms'"),
        ({"latency_ms": [5]}, "'latency_ms' must be a number or [min, max]"),
        ({"quality": -1}, "'quality'"),
        ({"failure_rate": 0.6, "malformed_rate": 0.6}, "add up to more than 1"),
        ({"seed": 1.5}, "'seed' must be an integer"),
        ({"replies": 3}, "'replies' must be a list or a mapping"),
    ],
)
def test_bad_parameters_are_reported_naming_model_and_parameter(params, fragment):
    with pytest.raises(MockParameterError) as info:
        mock("badmock", **params)
    assert fragment in str(info.value) and "badmock" in str(info.value)


def _mean_score(judge: MockInterface, student: MockInterface, n: int = 60) -> float:
    value = {"High": 1.0, "Medium": 0.5, "Low": 0.0}
    scores = []
    for i in range(n):
        answer = call(student, f"Question {i} about tides", role="student").text
        prompt = f"Rubric: accuracy, clarity, tone.\nQuestion {i} about tides\nAnswer:\n{answer}\nScore it."
        reply = json.loads(call(judge, prompt, role="judge", json_schema=SCHEMAS["judge_single"],
                                schema_name="judge_single").text)
        scores.extend(value[v] for v in reply.values())
    return statistics.mean(scores)


def test_mock_judges_separate_students_by_quality():
    judge = mock("judge", quality=0.9)
    strong, weak = mock("strong", quality=0.9), mock("weak", quality=0.2)
    assert _mean_score(judge, strong) > _mean_score(judge, weak) + 0.3
    # a judge with no reliability guesses: its scores barely separate them
    guesser = mock("guesser", quality=0.0)
    assert abs(_mean_score(guesser, strong) - _mean_score(guesser, weak)) < 0.2


def test_default_quality_differs_between_mock_models():
    qualities = {mock(f"student-{i}")._settings(mock(f"student-{i}").model.parameters).quality for i in range(5)}
    assert len(qualities) == 5 and all(0.35 <= q < 0.95 for q in qualities)

