"""scripts/quickstart.sh keeps the previous quick-start run: it is moved aside (and the
script says where) before the new run starts under the usual id."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _stub(path: Path, body: str) -> None:
    path.write_text("#!/usr/bin/env bash\n" + body, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def _checkout(tmp_path: Path) -> Path:
    """A copy of the script in a folder laid out like the repository, whose virtualenv's
    ``pip`` and ``coeval`` only record their arguments (no install, no model)."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "quickstart.sh", repo / "scripts" / "quickstart.sh")
    bin_dir = repo / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    _stub(bin_dir / "python", "exit 0\n")
    (bin_dir / "activate").write_text(f'PATH="{bin_dir}:$PATH"\n', encoding="utf-8")
    _stub(bin_dir / "pip", "exit 0\n")
    _stub(bin_dir / "coeval", f'echo "coeval $*" >> "{tmp_path}/calls"\n'
                              'if [ "$1" = run ]; then mkdir -p runs/quickstart-v1 && echo new > runs/quickstart-v1/meta.json; fi\n')
    return repo


def test_a_previous_quickstart_run_is_kept_and_the_script_says_where(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    old = repo / "runs" / "quickstart-v1"
    old.mkdir(parents=True)
    (old / "meta.json").write_text("old", encoding="utf-8")
    done = subprocess.run(["bash", str(repo / "scripts" / "quickstart.sh")], capture_output=True, text=True,
                          timeout=60, check=False, env={**os.environ, "PYTHON": "false"})
    assert done.returncode == 0, done.stderr
    kept = [p for p in (repo / "runs").iterdir() if p.name != "quickstart-v1"]
    assert len(kept) == 1 and kept[0].name.startswith("quickstart-v1.previous-")
    assert (kept[0] / "meta.json").read_text(encoding="utf-8") == "old"
    assert (old / "meta.json").read_text(encoding="utf-8").strip() == "new"
    assert f"kept the previous quick-start run as runs/{kept[0].name}" in done.stdout + done.stderr
    calls = (tmp_path / "calls").read_text(encoding="utf-8").splitlines()
    assert calls[0] == "coeval run --config examples/quickstart.yaml"


def test_a_first_quickstart_run_says_nothing_about_a_previous_one(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    done = subprocess.run(["bash", str(repo / "scripts" / "quickstart.sh")], capture_output=True, text=True,
                          timeout=60, check=False, env={**os.environ, "PYTHON": "false"})
    assert done.returncode == 0, done.stderr
    assert "previous" not in done.stdout + done.stderr
    assert [p.name for p in (repo / "runs").iterdir()] == ["quickstart-v1"]
