"""The core names no plugin: a task's own data (``tasks[].data``) is read by the reader a plugin
registers for its source (``register_task_data_readers``), and the evaluator names a config
may not reuse or may route to are those registered. Without the plugin, a data task is one
validation error naming what to install (exit code 2), never a traceback."""

from __future__ import annotations

import csv
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import pluggy
import pytest
import yaml
from click.testing import CliRunner
from coeval import RegisterEvaluator, RegisterTaskDataReader, hookimpl
from coeval.cli.main import cli
from coeval.config import ConfigError
from coeval.evaluators.label import LabelEvaluator
from coeval.plugins.config_loading import load_config
from coeval.plugins.manager import new_plugin_manager, registries, use_plugin_manager


@pytest.fixture
def core_only() -> Iterator[pluggy.PluginManager]:
    """The core plugin alone: registries without coeval-benchmarks' reader and evaluators."""
    manager = new_plugin_manager(entry_points=False)
    use_plugin_manager(manager)
    yield manager
    use_plugin_manager(None)


def _config(folder: Path, data: Mapping[str, Any], *, models: list[dict[str, Any]] | None = None,
            rubric: Mapping[str, Any] | None = None) -> Path:
    raw = {
        "models": models or [{"name": "student", "interface": "mock", "roles": ["student"]},
                             {"name": "judge", "interface": "mock", "roles": ["judge"]}],
        "tasks": [{"name": "support", "description": "Answer the customer's question.", "data": dict(data),
                   "rubric": dict(rubric or {"helpful": "The answer solves the problem."})}],
        "experiment": {"id": "own-data", "storage_folder": str(folder / "runs")},
    }
    path = folder / "support.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    with (folder / "support.csv").open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=["question", "answer"])
        writer.writeheader()
        writer.writerow({"question": "Where is my parcel?", "answer": "It ships tomorrow."})
    return path


@pytest.mark.parametrize("command", [["run", "--dry-run"], ["plan"]])
def test_a_data_task_without_its_reader_is_one_error_naming_what_to_install(
    tmp_path: Path, core_only: pluggy.PluginManager, command: list[str]
) -> None:
    config = _config(tmp_path, {"file": "support.csv", "prompt": "question"})
    result = CliRunner().invoke(cli, [*command, str(config)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "V-61" in result.output and "tasks[0].data" in result.output
    assert ("tasks[].data.file is read by a plugin's task-data reader, and no installed plugin registers "
            "one (pip install coeval-benchmarks)") in result.output


@attrs.frozen
class _Facts:
    sha256: str
    rows: int
    label_values: Mapping[str, tuple[str, ...]]


#: what the reader below was asked to inspect: (spec, base_dir)
_INSPECTED: list[tuple[dict[str, Any], Path]] = []


class _SpreadsheetReader:
    """A third party's reader of data files: it says what the file holds."""

    def inspect_data(self, spec: Mapping[str, Any], base_dir: Path, /) -> _Facts:
        _INSPECTED.append((dict(spec), base_dir))
        return _Facts(sha256="f" * 64, rows=7, label_values={})

    def task_rows(self, task: str, spec: Mapping[str, Any], base_dir: Path, now: str, /) -> list[dict[str, Any]]:
        return []


class SpreadsheetPlugin:
    @hookimpl
    def register_task_data_readers(self, register: RegisterTaskDataReader) -> None:
        register("file", _SpreadsheetReader)


def test_the_registered_reader_of_a_source_reads_the_data(tmp_path: Path, core_only: pluggy.PluginManager) -> None:
    core_only.register(SpreadsheetPlugin(), name="spreadsheets")
    assert registries().task_data_readers.entry("file").plugin == "spreadsheets"
    config = load_config(_config(tmp_path, {"file": "support.csv", "prompt": "question"}))
    data = config.tasks[0].data
    assert data is not None and (data.sha256, data.rows) == ("f" * 64, 7)
    assert _INSPECTED[-1] == ({"file": "support.csv", "prompt": "question"}, tmp_path)
    with pytest.raises(ConfigError) as caught:  # it reads files, and no plugin reads datasets
        load_config(_config(tmp_path, {"dataset": "org/tickets", "prompt": "question"}))
    assert "tasks[].data.dataset is read by a plugin's task-data reader" in str(caught.value)


def test_a_model_may_take_the_name_of_an_evaluator_no_plugin_registers(
    tmp_path: Path, core_only: pluggy.PluginManager
) -> None:
    models = [{"name": "gold", "interface": "mock", "roles": ["teacher", "student", "judge"]}]
    raw = {"models": models,
           "tasks": [{"name": "t", "description": "Answer.", "target_attributes": {"topic": ["x"]},
                      "rubric": {"c": "Right."}, "sampling": {"total": 1}}],
           "experiment": {"id": "e", "storage_folder": str(tmp_path / "runs")}}
    assert [m.name for m in load_config(raw).models] == ["gold"]

    class GoldPlugin:
        @hookimpl
        def register_evaluators(self, register: RegisterEvaluator) -> None:
            register("gold", LabelEvaluator())

    core_only.register(GoldPlugin(), name="gold-answers")
    with pytest.raises(ConfigError) as caught:
        load_config(raw)
    assert [(i.rule, i.path) for i in caught.value.issues] == [("V-37", "models[0].name")]


def test_a_factor_routed_to_an_evaluator_no_plugin_registers_is_refused(
    tmp_path: Path, core_only: pluggy.PluginManager
) -> None:
    raw = {"models": [{"name": "m", "interface": "mock", "roles": ["teacher", "student", "judge"]}],
           "tasks": [{"name": "t", "description": "Answer.", "target_attributes": {"topic": ["x"]},
                      "rubric": {"c": "Right.", "gold": {"evaluator": "gold"}}, "sampling": {"total": 1}}],
           "experiment": {"id": "e", "storage_folder": str(tmp_path / "runs")}}
    with pytest.raises(ConfigError) as caught:
        load_config(raw)
    assert [(i.rule, i.path) for i in caught.value.issues] == [("V-47", "tasks[0].rubric.gold.evaluator")]
