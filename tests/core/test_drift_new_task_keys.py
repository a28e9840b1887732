"""A run recorded before a task setting existed is not drift when the setting keeps its
default (``data``, ``checker``, ``samples``); a changed data file still is."""

from __future__ import annotations

from pathlib import Path

import attrs
from coeval.config.task_data import TaskData
from coeval.run.drift import find_drift, settings_of

from .pipeline_support import make_config, mock_model


def test_settings_recorded_before_new_task_keys_are_not_drift(tmp_path: Path) -> None:
    config = make_config(tmp_path, [mock_model("m")])
    recorded = settings_of(config)
    for task in recorded["tasks"].values():
        for key in ("data", "checker", "samples"):
            task["definition"].pop(key)
        task["hash"] = "recorded-by-an-older-version"
    assert find_drift(recorded, config) == []
    sampled = attrs.evolve(config, tasks=(attrs.evolve(config.tasks[0], samples=3),))
    assert [(c.setting, c.old, c.new) for c in find_drift(recorded, sampled)] == [("samples", "(not set)", 3)]


def test_a_changed_data_file_is_compared_by_rows_and_a_changed_data_setting_is_drift(tmp_path: Path) -> None:
    """The file's hash and row count are no setting to compare: its rows are
    (tests/core/test_data_rows_drift.py); a changed column name still is a setting."""
    config = make_config(tmp_path, [mock_model("m")])
    before = attrs.evolve(config, tasks=(attrs.evolve(config.tasks[0], data=TaskData("q", file="a.csv", sha256="1",
                                                                                     rows=5)),))
    after = attrs.evolve(config, tasks=(attrs.evolve(config.tasks[0], data=TaskData("q", file="a.csv", sha256="2",
                                                                                    rows=6)),))
    assert find_drift(settings_of(before), after) == []
    renamed = attrs.evolve(config, tasks=(attrs.evolve(config.tasks[0], data=TaskData("q2", file="a.csv",
                                                                                      sha256="1", rows=5)),))
    assert [(c.setting, c.old, c.new) for c in find_drift(settings_of(before), renamed)] == [("data.prompt", "q", "q2")]
