"""A task without a rubric gets ``rubric: auto`` (the teachers propose the factors in
phase 2, one call each): ``run --dry-run`` and ``plan`` say so, with the calls it costs."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli

CONFIG = """\
models:
  - {name: teacher-a, interface: mock, roles: [teacher, student, judge]}
  - {name: teacher-b, interface: mock, roles: [teacher]}
tasks:
  - name: qa
    description: Answer a question.
    output_description: One sentence.
    target_attributes: {topic: [history]}
    sampling: {total: 2}
{rubric}experiment: {id: rubric-note, storage_folder: ./runs}
"""
NOTE = ("note: task qa: rubric auto (what a task without `rubric:` gets): each of its 2 teachers proposes the "
        "factors in phase 2 (2 calls); give `rubric: {factor: criterion}` to skip them")


@pytest.mark.parametrize("command", [["run", "--dry-run"], ["plan", "--estimate-samples", "0"]])
def test_a_left_out_rubric_is_named_with_its_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   command: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    Path("exp.yaml").write_text(CONFIG.replace("{rubric}", ""), encoding="utf-8")
    done = CliRunner().invoke(cli, [*command, "exp.yaml"], terminal_width=400)
    assert done.exit_code == 0, done.output
    assert NOTE in " ".join(done.output.split())


def test_a_written_rubric_gets_no_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("exp.yaml").write_text(CONFIG.replace("{rubric}", "    rubric: {correctness: The answer is right.}\n"),
                                encoding="utf-8")
    done = CliRunner().invoke(cli, ["run", "--dry-run", "exp.yaml"], terminal_width=400)
    assert done.exit_code == 0, done.output
    assert "rubric: auto" not in done.output
