"""The mock answers the pipeline's own structured-output schemas with sensible content."""

from __future__ import annotations

import json

import jsonschema

from .test_mock_interface import call, mock


def test_the_pipelines_own_schemas_get_sensible_list_shaped_maps():
    from coeval.prompts.schemas import (
        ATTRIBUTES_SCHEMA,
        DATAPOINT_SCHEMA,
        JUDGE_FACTOR_SCHEMA,
        RUBRIC_SCHEMA,
        judge_single_schema,
        parse_attribute_map,
        parse_datapoint,
        parse_rubric,
    )

    iface = mock()
    cases = [
        (ATTRIBUTES_SCHEMA, "target_attributes"),
        (ATTRIBUTES_SCHEMA, "nuanced_attributes"),
        (RUBRIC_SCHEMA, "rubric"),
        (DATAPOINT_SCHEMA, "datapoint"),
        (JUDGE_FACTOR_SCHEMA, "judge_factor"),
        (judge_single_schema(["accuracy", "clarity"]), "judge_single"),
    ]
    for schema, name in cases:
        text = call(iface, "Task: summarise news about volcanoes", json_schema=schema, schema_name=name).text
        jsonschema.validate(json.loads(text), schema)
    attrs = parse_attribute_map(call(iface, "attrs", json_schema=ATTRIBUTES_SCHEMA, schema_name="target_attributes").text)
    assert 2 <= len(attrs) <= 4 and all(len(v) >= 2 for v in attrs.values())
    rubric = parse_rubric(call(iface, "rubric", json_schema=RUBRIC_SCHEMA, schema_name="rubric").text)
    assert 2 <= len(rubric) <= 4 and all(d.endswith(".") for d in rubric.values())
    assert parse_datapoint(call(iface, "dp", json_schema=DATAPOINT_SCHEMA, schema_name="datapoint").text)["response"]
