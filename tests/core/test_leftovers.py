"""Files a killed process leaves (temporary files of atomic writes, a killed repair
rehearsal's scratch folder) are removed by the next command that holds the folder."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from coeval.plugins.manager import registries
from coeval.run.repair import repair_run

from tests.core.pipeline_support import folder, make_config, mock_model, run, task


def test_repair_removes_temporary_files_and_stale_rehearsals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    config = make_config(tmp_path, [mock_model("a")], [task(total=2)])
    assert run(config).exit_code == 0
    rf = folder(config)
    left = [rf.root / ".meta.json.k3j2h1.tmp", rf.root / "phase4_responses" / ".qa.a.a.responses.jsonl.77.tmp"]
    for path in left:
        path.write_text("half")
    dead = tmp_path / "tmp" / "coeval-repair-999999-abc"  # no such process
    (dead / "exp").mkdir(parents=True)

    repair_run(rf, registries=registries(), dry_run=True)
    assert not dead.exists()
    assert list((tmp_path / "tmp").iterdir()) == []  # the rehearsal cleaned up after itself
    assert all(p.exists() for p in left)  # a dry run changes nothing in the run
    repair_run(rf, registries=registries())
    assert not any(p.exists() for p in left)


def test_a_run_removes_temporary_files_of_killed_writes(tmp_path: Path) -> None:
    config = make_config(tmp_path, [mock_model("a")], [task(total=2)])
    assert run(config).exit_code == 0
    leftover = folder(config).root / ".config.yaml.x1y2.tmp"
    leftover.write_text("half")
    assert run(config, continue_run=True).exit_code == 0
    assert not leftover.exists()
