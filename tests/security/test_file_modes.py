"""One file-mode policy for a run folder: records hold prompts and answers, which may be
private, so every file CoEval writes there, and in the viewer's cache, is 0600 (owner
read and write only), whatever the umask."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.robustness._support import base_config, write_config

#: every command's files in subprocesses: over ten seconds
pytestmark = pytest.mark.slow


def _coeval(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coeval.cli.main", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=240, check=False)


def _modes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): oct(stat.S_IMODE(p.stat().st_mode))
            for p in folder.rglob("*") if p.is_file() and not p.is_symlink()}


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_every_file_of_a_run_folder_and_the_viewer_cache_is_0600(tmp_path: Path, umask: int) -> None:
    env = {**os.environ, "COEVAL_VIEW_CACHE": str(tmp_path / "cache")}
    config = base_config(tmp_path / "runs")
    config["experiment"]["probe_mode"] = "disable"
    write_config(tmp_path / "exp.yaml", config)
    old = os.umask(umask)  # inherited by the subprocesses
    try:
        steps = [
            ("run", "--config", "exp.yaml"),
            ("analyze", "--run", "runs/robust", "--bootstrap", "0", "--quiet"),
            ("export", "--run", "runs/robust", "--format", "csv", "--out", "runs/robust/export/j.csv"),
            ("status", "--run", "runs/robust"),
        ]
        for args in steps:
            done = _coeval(*args, cwd=tmp_path, env=env)
            assert done.returncode == 0, (args, done.stderr)
    finally:
        os.umask(old)
    run_modes = _modes(tmp_path / "runs" / "robust")
    cache_modes = _modes(tmp_path / "cache")
    assert any(name.endswith(".jsonl") for name in run_modes) and any("report.html" in n for n in run_modes)
    assert cache_modes, "the viewer cache was not written"
    wrong = {k: v for k, v in {**run_modes, **{f"cache/{k}": v for k, v in cache_modes.items()}}.items() if v != "0o600"}
    assert wrong == {}, sorted(wrong)
