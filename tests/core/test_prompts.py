"""Prompt templates: every id renders, overrides resolve, braces never break a prompt."""

from __future__ import annotations

import pytest
from coeval.prompts import (
    DEFAULT_TEMPLATES,
    TEMPLATE_IDS,
    TEMPLATE_VARIABLES,
    PromptTemplateError,
    render,
    render_prompt,
    resolve_template,
    template_fields,
    validate_prompt_library,
)


def test_there_are_seven_templates_and_each_uses_only_its_own_variables():
    assert set(TEMPLATE_IDS) == {"map_target_attrs", "map_nuanced_attrs", "autorubric", "sample", "test",
                                 "evaluate_single", "evaluate_per_factor"}
    for tid in TEMPLATE_IDS:
        used = set(template_fields(DEFAULT_TEMPLATES[tid]))
        assert used, tid
        assert used <= TEMPLATE_VARIABLES[tid], (tid, used - TEMPLATE_VARIABLES[tid])


@pytest.mark.parametrize("tid", TEMPLATE_IDS)
def test_every_canonical_template_renders_completely(tid):
    values = {name: f"<{name}>" for name in TEMPLATE_VARIABLES[tid]}
    text = render_prompt(tid, values)
    for name in template_fields(DEFAULT_TEMPLATES[tid]):
        assert f"<{name}>" in text
    assert "{" + "task_description" + "}" not in text


def test_the_documented_variable_names_of_the_seed_docs_work():
    # configuration guide: sample / test / evaluate_single / evaluate_per_factor
    assert render("{task_description}|{output_description}|{target_attributes}|{nuanced_attributes}",
                  {"task_description": "T", "output_description": "O", "target_attributes": "A",
                   "nuanced_attributes": "N"}) == "T|O|A|N"
    lib = {"evaluate_per_factor": "{input}/{response}/{reference}/{factor}/{criterion}",
           "evaluate_single": "{input}/{response}/{reference}/{rubric}",
           "test": "{input}/{task_description}/{output_description}"}
    assert validate_prompt_library(lib) == []
    out = render_prompt("evaluate_per_factor", {"input": "i", "response": "r", "reference": "ref", "factor": "f",
                                                "criterion": "c"}, prompt_library=lib)
    assert out == "i/r/ref/f/c"


def test_the_earlier_tools_variable_names_are_aliases():
    lib = {"evaluate_per_factor": "{reference_response}|{rubric_factor_name}|{rubric_factor_description}|{prompt}"}
    assert validate_prompt_library(lib) == []
    out = render_prompt("evaluate_per_factor", {"reference": "R", "factor": "F", "criterion": "C", "input": "I"},
                        prompt_library=lib)
    assert out == "R|F|C|I"


def test_values_with_braces_are_inserted_verbatim_and_never_reformatted():
    nasty = 'def f(x): return {"a": x} and {input} and {{ and { and }'
    out = render_prompt("test", {"input": nasty, "task_description": "{task_description}", "output_description": "}"})
    assert nasty in out
    assert "Answer format: }" in out


def test_doubled_braces_are_literal_and_lone_json_braces_survive():
    text = 'Return JSON: {{"prompt": "..."}} for {task_description}; also {"raw": 1}'
    assert render(text, {"task_description": "X"}) == 'Return JSON: {"prompt": "..."} for X; also {"raw": 1}'


def test_override_order_is_model_then_task_then_canonical():
    lib = {"sample": "task-level {task_description}", "sample.gpt-4o-mini": "model-level {task_description}"}
    assert resolve_template("sample", lib, "gpt-4o-mini") == lib["sample.gpt-4o-mini"]
    assert resolve_template("sample", lib, "other.model") == lib["sample"]
    assert resolve_template("test", lib, "gpt-4o-mini") == DEFAULT_TEMPLATES["test"]


def test_unknown_variables_and_ids_are_reported_for_validation():
    problems = validate_prompt_library({"sample": "{task_description} {rubric}", "samples": "x",
                                        "test.my.model": "{input} {nope}"})
    assert any("sample: unknown variable {rubric}" in p for p in problems)
    assert any("samples: unknown template id" in p for p in problems)
    assert any("test.my.model: unknown variable {nope}" in p for p in problems)


def test_rendering_an_unknown_variable_fails_loudly():
    with pytest.raises(PromptTemplateError):
        render("{mystery}", {})
    with pytest.raises(PromptTemplateError):
        resolve_template("nonexistent", {}, None)


def test_structured_values_render_as_json():
    out = render("{target_attributes}", {"target_attributes": {"tone": "ça va"}})
    assert out == '{"tone": "ça va"}'
