"""``coeval repair --dry-run`` names the phases that ``coeval repair`` then reopens."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval.storage.run_folder import RunFolder

from .pipeline_support import folder, make_config, meta, mock_model, run, task


def _finished(tmp_path: Path) -> RunFolder:
    cfg = make_config(tmp_path, [mock_model("a"), mock_model("b")], [task(total=2)])
    assert run(cfg).exit_code == 0
    return folder(cfg)


def _drop_first_line(path: Path) -> None:
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[1:]))


def _cut_a_datapoint_line(rf: RunFolder) -> None:
    """A crash-cut line in phase 3: phase 3 stays complete, nothing is reopened before 5."""
    path = sorted(rf.jsonl_files("data_generation"))[0]
    text = path.read_text().splitlines(keepends=True)
    path.write_text(text[0] + '{"id": "cut-by-a-crash", "prom\n' + "".join(text[1:]))
    ev = sorted(rf.jsonl_files("evaluation"))[0]
    victim = json.loads(ev.read_text().splitlines()[0])
    with ev.open("a") as fh:
        fh.write(json.dumps({**victim, "status": "failed", "scores": {}, "error": "x"}) + "\n")


def _lose_a_response(rf: RunFolder) -> None:
    """A response gone: its evaluations become orphans, and phase 4 has a gap."""
    _drop_first_line(sorted(rf.jsonl_files("response_collection"))[0])


@pytest.mark.parametrize(
    ("damage", "reopened"),
    [
        (_cut_a_datapoint_line, ["evaluation"]),
        (_lose_a_response, ["response_collection", "evaluation"]),
    ],
)
def test_dry_run_and_repair_reopen_the_same_phases(
    tmp_path: Path, damage: Callable[[RunFolder], None], reopened: list[str]
) -> None:
    rf = _finished(tmp_path)
    damage(rf)
    before = {p: p.read_bytes() for p in rf.root.rglob("*") if p.is_file() and p.name != ".run.lock"}
    dry = CliRunner().invoke(cli, ["repair", "--run", str(rf.root), "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    assert json.loads(dry.output)["phases_reopened"] == reopened
    assert {p: p.read_bytes() for p in before} == before  # the rehearsal used a copy
    assert sorted(p.name for p in rf.root.parent.iterdir()) == [rf.root.name]
    real = CliRunner().invoke(cli, ["repair", "--run", str(rf.root), "--json"])
    assert real.exit_code == 0, real.output
    assert json.loads(real.output)["phases_reopened"] == reopened
    assert [p for p in meta(rf)["phases_completed"] if p in reopened] == []
