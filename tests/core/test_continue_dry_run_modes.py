"""``run --continue --dry-run`` shows the modes ``--continue`` runs the phases in (Keep for
the attribute and rubric maps, Extend for the records), not the config's New."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli

CONFIG = """\
models:
  - {name: m, interface: mock, roles: [teacher, student, judge]}
tasks:
  - name: qa
    description: Answer a question.
    output_description: One sentence.
    target_attributes: {topic: [history]}
    rubric: {correct: The answer is right.}
    sampling: {total: 3}
experiment: {id: cont, storage_folder: ./runs}
"""


def _mode_row(output: str) -> list[str]:
    lines = output.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("Calls per phase"))
    row = next(line for line in lines[at + 1:] if line.strip().startswith("task"))
    return row.split()[1:-1]


def test_continue_dry_run_shows_keep_and_extend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("exp.yaml").write_text(CONFIG, encoding="utf-8")
    first = CliRunner().invoke(cli, ["run", "exp.yaml", "--limit", "1", "-q"])
    assert first.exit_code == 0, first.output
    plain = CliRunner().invoke(cli, ["run", "exp.yaml", "--dry-run", "--continue"], terminal_width=200)
    assert plain.exit_code == 0, plain.output
    assert _mode_row(plain.output) == ["Keep", "Keep", "Extend", "Extend", "Extend"]
    fresh = CliRunner().invoke(cli, ["run", "exp.yaml", "--dry-run"], terminal_width=200)
    assert _mode_row(fresh.output) == ["New"] * 5
