"""Loading configs: defaults the seed examples rely on, structuring, line numbers, overrides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval.config import ConfigError
from coeval.config._yaml import read_yaml
from coeval.config.model import Config, SamplingConfig
from coeval.plugins.config_loading import load_config

ROOT = Path(__file__).parents[2]

MINIMAL = {
    "models": [{"name": "m", "interface": "mock", "roles": ["teacher", "student", "judge"]}],
    "tasks": [{"name": "t", "description": "Do the thing."}],
    "experiment": {"id": "e"},
}


def test_minimal_mapping_gets_documented_defaults() -> None:
    config = load_config(MINIMAL, check_filesystem=False)
    assert isinstance(config, Config)
    task = config.tasks[0]
    assert task.target_attributes == "auto"
    assert task.nuanced_attributes == {}
    assert task.rubric == "auto"
    assert task.evaluation_mode == "single"
    assert task.sampling == SamplingConfig(target=(1, 1), nuance=(0, 0), total=10)
    exp = config.experiment
    assert exp.storage_folder == "./eval_runs"
    assert exp.phases.as_dict() == dict.fromkeys(exp.phases.as_dict(), "New")
    assert (exp.probe_mode, exp.probe_on_fail, exp.log_level, exp.generation_retries) == (
        "full",
        "abort",
        "INFO",
        2,
    )
    assert config.source is None


def test_seed_example_without_nuanced_attributes_loads(tmp_path: Path) -> None:
    """The seed README's minimal config leaves nuanced_attributes out; it must load."""
    path = tmp_path / "readme.yaml"
    path.write_text(
        """\
models:
  - name: gpt-4o-mini
    interface: openai
    parameters: {model: gpt-4o-mini}
    roles: [teacher, student, judge]
tasks:
  - name: text_summarization
    description: Summarise a passage.
    output_description: A short summary.
    target_attributes:
      complexity: [simple, complex]
    sampling:
      target: [1, 1]
      total: 20
    rubric:
      accuracy: The summary is accurate.
experiment:
  id: readme-v1
  storage_folder: ./runs
""",
        encoding="utf-8",
    )
    config = load_config(path, check_filesystem=False)
    assert config.tasks[0].nuanced_attributes == {}
    assert config.tasks[0].sampling.nuance == (0, 0)
    assert config.source == str(path)


def test_sampling_shorthands_and_values_are_normalised() -> None:
    raw = json.loads(json.dumps(MINIMAL))
    raw["tasks"][0].update(
        target_attributes={"grade": [3, 4], "tone": ["formal"]},
        nuanced_attributes={"style": ["terse", "chatty"]},
        sampling={"target": "all", "nuance": [2], "total": 7},
        rubric={"ok": "Fine.", "overlap": {"metric": "bleu", "description": "n-gram overlap"}},
        label_attributes=["tone"],
    )
    task = load_config(raw, check_filesystem=False).tasks[0]
    assert task.sampling == SamplingConfig(target="all", nuance=(2, 2), total=7)
    assert task.target_attributes == {"grade": ("3", "4"), "tone": ("formal",)}
    assert task.rubric["overlap"] == {"metric": "bleu", "description": "n-gram overlap"}
    assert task.label_attributes == ("tone",)


def test_nuance_defaults_to_one_value_when_the_task_has_nuanced_attributes() -> None:
    raw = json.loads(json.dumps(MINIMAL))
    raw["tasks"][0]["nuanced_attributes"] = {"style": ["a", "b"]}
    assert load_config(raw, check_filesystem=False).tasks[0].sampling.nuance == (1, 1)


def test_resume_from_defaults_phases_to_keep_then_extend(tmp_path: Path) -> None:
    (tmp_path / "runs" / "old").mkdir(parents=True)
    raw = json.loads(json.dumps(MINIMAL))
    raw["experiment"].update(
        storage_folder=str(tmp_path / "runs"), resume_from="old", phases={"evaluation": "New"}
    )
    config = load_config(raw)
    assert config.experiment.phases.as_dict() == {
        "attribute_mapping": "Keep",
        "rubric_mapping": "Keep",
        "data_generation": "Keep",
        "response_collection": "Extend",
        "evaluation": "New",  # given explicitly
    }


def test_resume_override_and_path_reference(tmp_path: Path) -> None:
    source = tmp_path / "elsewhere" / "v0"
    source.mkdir(parents=True)
    raw = json.loads(json.dumps(MINIMAL))
    raw["experiment"]["storage_folder"] = str(tmp_path / "runs")
    config = load_config(raw, resume_from=str(source))
    assert config.experiment.resume_from == str(source)
    with pytest.raises(ConfigError) as err:
        load_config(raw, resume_from=str(tmp_path / "missing"))
    assert err.value.rules == ["V-10"]


def test_new_run_refuses_existing_folder_but_continue_needs_it(tmp_path: Path) -> None:
    raw = json.loads(json.dumps(MINIMAL))
    raw["experiment"]["storage_folder"] = str(tmp_path)
    load_config(raw)  # nothing there yet: a new run is fine
    with pytest.raises(ConfigError) as err:
        load_config(raw, continue_run=True)
    assert err.value.rules == ["V-14"]
    folder = tmp_path / "e"
    folder.mkdir()
    (folder / "meta.json").write_text(json.dumps({"experiment_id": "e"}), encoding="utf-8")
    load_config(raw, continue_run=True)
    with pytest.raises(ConfigError) as err:
        load_config(raw)
    assert err.value.rules == ["V-11"]
    load_config(raw, allow_existing_run=True)  # an --only-models shard joins the run
    load_config(raw, check_filesystem=False)


def test_interfaces_of_uninstalled_distributions_are_accepted() -> None:
    raw = json.loads(json.dumps(MINIMAL))
    raw["models"] = [
        {"name": n, "interface": n, "parameters": {"model": "x"}, "roles": ["teacher", "student", "judge"]}
        for n in ("bedrock", "vertex", "cohere", "huggingface", "azure_ai")
    ]
    config = load_config(raw, check_filesystem=False)
    assert [m.interface for m in config.models] == ["bedrock", "vertex", "cohere", "huggingface", "azure_ai"]


def test_role_parameters_merge_over_parameters(tmp_path: Path) -> None:
    raw = json.loads(json.dumps(MINIMAL))
    raw["models"][0]["parameters"] = {"temperature": 0.7, "max_tokens": 512}
    raw["models"][0]["role_parameters"] = {"judge": {"temperature": 0.0}}
    model = load_config(raw, check_filesystem=False).models[0]
    assert model.params_for("judge") == {"temperature": 0.0, "max_tokens": 512}
    assert model.params_for("student") == {"temperature": 0.7, "max_tokens": 512}


def test_extension_keys_and_anchors_are_allowed() -> None:
    config = load_config(ROOT / "docs" / "examples" / "medium-benchmark.yaml", check_filesystem=False)
    assert all(m.roles == ("teacher", "student", "judge") for m in config.models)
    assert config.models[0].role_parameters["judge"] == {"temperature": 0.0, "max_tokens": 128}


def test_warnings_do_not_stop_loading(tmp_path: Path) -> None:
    raw = json.loads(json.dumps(MINIMAL))
    raw["models"][0]["roles"] = ["teacher", "student", "judge"]
    raw["models"].append(
        {"name": "s", "interface": "mock", "roles": ["student"], "role_parameters": {"judge": {}}}
    )
    config = load_config(raw, check_filesystem=False)
    assert [(w.rule, w.path, w.severity) for w in config.warnings] == [
        ("V-33", "models[1].role_parameters.judge", "warning")
    ]


def test_line_map_follows_yaml_paths() -> None:
    _, lines, problems = read_yaml("a:\n  b:\n    - x\n    - y: 1\n      z: 2\n")
    assert problems == []
    assert lines.line(("a", "b", 1, "z")) == 5
    assert lines.line(("a", "b", 0)) == 3
    assert lines.line(("a", "b", 1, "missing")) == 4  # nearest ancestor


def test_schema_command_prints_the_schema() -> None:
    result = CliRunner().invoke(cli, ["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert set(schema["required"]) == {"models", "tasks", "experiment"}
    assert "evaluation_mode" in schema["$defs"]["task"]["properties"]


def test_a_folder_without_a_run_does_not_block_a_new_run(tmp_path: Path) -> None:
    """Only meta.json or phase files make a folder an existing run (V-11)."""
    raw = json.loads(json.dumps(MINIMAL))
    raw["experiment"]["storage_folder"] = str(tmp_path)
    folder = tmp_path / "e"
    folder.mkdir()
    (folder / "cost_estimate.json").write_text("{}", encoding="utf-8")
    (folder / "run.log").write_text("", encoding="utf-8")  # a start-up that died early
    load_config(raw)
    (folder / "phase3_datapoints").mkdir()
    (folder / "phase3_datapoints" / "t.m.datapoints.jsonl").write_text("{}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_config(raw)
    assert err.value.rules == ["V-11"]
