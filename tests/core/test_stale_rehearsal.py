"""A killed ``coeval repair --dry-run`` leaves its scratch copy of the records in the temp
folder; the next ``run`` that holds the folder alone removes it, as the next ``repair`` does."""

from __future__ import annotations

import subprocess
import sys
import tempfile

import pytest

from .pipeline_support import make_config, mock_model, run, task


def test_the_next_run_removes_a_killed_rehearsal(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a process id that is no more, as a killed rehearsal's
    left = scratch / f"coeval-repair-{gone.pid}-abc" / "exp" / "phase4_responses"
    left.mkdir(parents=True)
    (left / "qa.a.a.responses.jsonl").write_text('{"id": "x", "raw": "a reply"}\n')
    alive = scratch / "coeval-repair-1-def"  # pid 1 is alive: its rehearsal is not touched
    alive.mkdir()
    cfg = make_config(tmp_path, [mock_model("a")], [task(total=1)])
    assert run(cfg).exit_code == 0
    assert sorted(p.name for p in scratch.iterdir()) == ["coeval-repair-1-def"]
