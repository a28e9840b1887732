"""Shared helpers of the bad-input corpus: a valid base config and a CLI runner that
insists on clean failures (exit code 2, a message naming what is wrong, no traceback)."""

from __future__ import annotations

import copy
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner, Result
from coeval.cli.main import cli

#: A small valid experiment on the offline mock interface (2 x 2 x 2 = 14 calls).
BASE: dict[str, Any] = {
    "models": [
        {"name": "mock-a", "interface": "mock", "parameters": {"seed": 1}, "roles": ["teacher", "student", "judge"]},
        {"name": "mock-b", "interface": "mock", "parameters": {"seed": 2}, "roles": ["teacher", "student", "judge"]},
    ],
    "tasks": [
        {
            "name": "short_answer",
            "description": "Answer a general-knowledge question in one sentence.",
            "output_description": "One correct, complete sentence.",
            "target_attributes": {"topic": ["history", "science"], "difficulty": ["easy", "hard"]},
            "nuanced_attributes": {"phrasing": ["direct", "indirect"]},
            "sampling": {"target": [1, 2], "nuance": [1, 1], "total": 2},
            "rubric": {"correctness": "The answer is factually right.", "completeness": "The answer is whole."},
            "evaluation_mode": "single",
        }
    ],
    "experiment": {"id": "robust", "storage_folder": "runs"},
}


def base_config(storage: Path) -> dict[str, Any]:
    config = copy.deepcopy(BASE)
    config["experiment"]["storage_folder"] = str(storage)
    return config


def write_config(path: Path, config: dict[str, Any] | str) -> Path:
    text = config if isinstance(config, str) else yaml.safe_dump(config, sort_keys=False, allow_unicode=True)
    path.write_text(text, encoding="utf-8")
    return path


def invoke(args: Sequence[str], env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=True)


def no_traceback(result: Result) -> None:
    """The command ended through its own error handling, not an escaping exception."""
    exc = result.exception
    if exc is not None and not isinstance(exc, SystemExit):
        trace = "".join(traceback.format_exception(exc))
        raise AssertionError(f"unhandled {type(exc).__name__}: {exc}\n{result.output}\n{trace}")
    assert "Traceback" not in result.output, result.output


def assert_clean_failure(result: Result, *fragments: str) -> None:
    """Exit code 2, no traceback, and every fragment (rule ids, paths, file names) shown."""
    no_traceback(result)
    assert result.exit_code == 2, f"exit {result.exit_code}\n{result.output}"
    for fragment in fragments:
        assert fragment in result.output, f"{fragment!r} missing from:\n{result.output}"
