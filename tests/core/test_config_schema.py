"""The shipped JSON Schema: a valid schema, and in agreement with the loader."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import yaml
from coeval.config import ConfigError
from coeval.config._schema_check import config_schema, did_you_mean
from coeval.config.model import ExperimentConfig, ModelConfig, SamplingConfig, TaskConfig
from coeval.plugins.config_loading import load_config

ROOT = Path(__file__).parents[2]
CONFIGS = [*sorted((ROOT / "docs" / "examples").glob("*.yaml")), ROOT / "examples" / "mock_smoke.yaml"]


def test_schema_is_a_valid_json_schema() -> None:
    schema = config_schema()
    jsonschema.validators.validator_for(schema).check_schema(schema)


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_example_configs_satisfy_the_schema(path: Path) -> None:
    """Editors using the schema must not flag the documented examples."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    jsonschema.validate(data, config_schema())


def test_schema_keys_match_the_config_classes() -> None:
    """Every key the schema allows is a field of the structured config, and vice versa."""
    import attrs

    defs = config_schema()["$defs"]
    internal = {"requested_interface"}  # set by the loader, not written by users
    assert set(defs["model"]["properties"]) == {f.name for f in attrs.fields(ModelConfig)} - internal
    assert set(defs["task"]["properties"]) == {f.name for f in attrs.fields(TaskConfig)}
    assert set(defs["task"]["properties"]["sampling"]["properties"]) == {
        f.name for f in attrs.fields(SamplingConfig)
    }
    assert set(defs["experiment"]["properties"]) == {f.name for f in attrs.fields(ExperimentConfig)}


@pytest.mark.parametrize(
    ("word", "choices", "expected"),
    [
        ("evalution", ["evaluation", "rubric_mapping"], "evaluation"),
        ("new", ["New", "Keep"], "New"),
        ("zzz", ["New", "Keep"], None),
    ],
)
def test_did_you_mean(word: str, choices: list[str], expected: str | None) -> None:
    assert did_you_mean(word, choices) == expected


def test_schema_rejections_become_numbered_issues() -> None:
    raw = {
        "models": [
            {"name": "m", "interface": "mock", "roles": ["student", "judge", "teacher"], "colour": "red"}
        ],
        "tasks": [{"name": "t", "description": "d", "sampling": {"target": "some"}}],
        "experiment": {"id": "e", "probe_mode": "sometimes"},
    }
    with pytest.raises(ConfigError) as err:
        load_config(raw, check_filesystem=False)
    got = {(i.rule, i.path) for i in err.value.issues}
    assert got == {
        ("V-18", "models[0].colour"),
        ("V-23", "tasks[0].sampling.target"),
        ("V-15", "experiment.probe_mode"),
    }
