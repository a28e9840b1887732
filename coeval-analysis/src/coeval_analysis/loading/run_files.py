"""The small files of a run folder the analysis reads: ``meta.json``, the config snapshot,
the rubrics and target attributes of each task, and the phase folders' JSONL files.

Each is listed and read through the core's guard (:mod:`coeval.storage.safe_files`): a
FIFO, a device or a link leaving the run folder is an :class:`AnalysisInputError` naming
the file and the rule, never a hang or a read of a file elsewhere."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from coeval.config._yaml import load_yaml_guarded
from coeval.storage.run_folder import PHASE_DIRS, RunFolder
from coeval.storage.safe_files import UnsafeRunFile, read_run_file, run_files

from coeval_analysis.errors import AnalysisInputError

__all__ = ["PHASE3", "PHASE4", "PHASE5", "guarded", "jsonl_files", "label_attributes", "read_config", "read_json",
           "read_text", "target_attributes", "task_rubrics"]

# the run-folder layout is the core storage layer's: read through it, never spelt again here
PHASE3 = PHASE_DIRS["data_generation"]
PHASE4 = PHASE_DIRS["response_collection"]
PHASE5 = PHASE_DIRS["evaluation"]


@contextmanager
def guarded() -> Iterator[None]:
    """A run file refused by the core's guard, as the analysis' own one-line error."""
    try:
        yield
    except UnsafeRunFile as exc:
        raise AnalysisInputError(str(exc)) from None


def _root_of(path: Path) -> Path:
    """The run folder of a file the analysis reads: its folder, or the phase folder's parent."""
    parent = path.parent
    return parent.parent if parent.name in PHASE_DIRS.values() else parent


def read_text(path: Path, root: Path | None = None) -> str:
    """The UTF-8 text of the run file ``path`` (``FileNotFoundError`` when missing),
    through the guard; ``root``: its run folder (by default, worked out from the path)."""
    with guarded():
        return read_run_file(path, root or _root_of(path)).decode("utf-8")


def read_json(path: Path) -> Any:
    try:
        return json.loads(read_text(path))
    except FileNotFoundError:
        return None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise AnalysisInputError(f"{path}: not valid JSON ({exc})") from None


def read_config(root: Path) -> dict[str, Any]:
    path = RunFolder(root).config_path
    try:
        data = load_yaml_guarded(read_text(path, root), str(path))
    except FileNotFoundError:
        return {}
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise AnalysisInputError(f"{path}: not valid YAML ({exc})") from None
    return data if isinstance(data, dict) else {}


def _config_tasks(config: dict[str, Any]) -> list[dict[str, Any]]:
    tasks = config.get("tasks")
    return [t for t in tasks if isinstance(t, dict)] if isinstance(tasks, list) else []


def task_rubrics(root: Path, config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    rubrics: dict[str, dict[str, Any]] = {}
    for task in _config_tasks(config):
        if isinstance(task.get("rubric"), dict):
            rubrics[str(task.get("name"))] = dict(task["rubric"])
    for name, path in _task_files(RunFolder(root).rubric_path("*")):
        data = read_json(path)
        if not isinstance(data, dict):
            raise AnalysisInputError(f"{path}: a rubric must be a JSON object of factor -> criterion")
        rubrics[name] = data
    return rubrics


def target_attributes(root: Path, config: dict[str, Any]) -> dict[str, dict[str, list[str]]]:
    out: dict[str, dict[str, list[str]]] = {}
    for task in _config_tasks(config):
        if isinstance(task.get("target_attributes"), dict):
            out[str(task.get("name"))] = {
                str(k): [str(v) for v in (vs if isinstance(vs, list) else [vs])]
                for k, vs in task["target_attributes"].items()
            }
    for name, path in _task_files(RunFolder(root).target_attrs_path("*")):
        data = read_json(path)
        if isinstance(data, dict):
            out[name] = {str(k): [str(v) for v in (vs if isinstance(vs, list) else [vs])] for k, vs in data.items()}
    return out


def _task_files(pattern: Path) -> list[tuple[str, Path]]:
    """(task, path) of each per-task artifact matching the storage layer's path for task
    ``*`` (``phase2_rubric/*.rubric.json``)."""
    suffix = pattern.name[1:]
    with guarded():
        found = run_files(pattern.parent, pattern.name, pattern.parent.parent)
    return [(path.name[: -len(suffix)], path) for path in found]


def label_attributes(config: dict[str, Any]) -> dict[str, list[str]]:
    return {
        str(t.get("name")): [str(a) for a in t["label_attributes"]]
        for t in _config_tasks(config)
        if isinstance(t.get("label_attributes"), list) and t["label_attributes"]
    }


def jsonl_files(root: Path, phase: str) -> list[Path]:
    """The record files of a phase folder, each checked by the guard."""
    with guarded():
        return run_files(root / phase, "*.jsonl", root)
