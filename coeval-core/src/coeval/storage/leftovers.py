"""Files a killed process leaves behind, and their removal by the next command.

Writes that must be whole go through a temporary file renamed into place (``.NAME.*.tmp``
beside the file); a SIGKILL between the two leaves the temporary file. Scratch folders
(``coeval-repair-<pid>-*`` under the temp folder, the analysis staging folders) carry the
pid of their process. The next command that holds the run folder alone removes those
temporary files; scratch folders are removed once their process is gone.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from pathlib import Path

from coeval.storage.run_folder import PHASE_DIRS

__all__ = ["pid_alive", "remove_stale_scratch", "sweep_temp_files"]

#: ``atomic_write_text``'s and ``fork_run``'s temporary files: ``.NAME.<random or pid>.tmp``
_TEMP_FILE = re.compile(r"^\..+\.tmp$")
#: a scratch folder or file whose name carries its process id
_WITH_PID = re.compile(r"^(?P<prefix>.+?)-(?P<pid>\d+)-")


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (on this machine)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_temp_files(root: Path) -> list[Path]:
    """Remove the temporary files of interrupted writes in the run folder and its phase
    folders. Call only while holding the run folder alone (a shard may be writing one)."""
    removed: list[Path] = []
    for folder in (root, *(root / d for d in PHASE_DIRS.values())):
        try:
            entries = list(folder.iterdir())
        except OSError:
            continue
        for path in entries:
            if _TEMP_FILE.match(path.name) and path.is_file() and not path.is_symlink():
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                    removed.append(path)
    return removed


def remove_stale_scratch(folder: Path | None = None, prefix: str = "coeval-repair") -> list[Path]:
    """Remove ``<prefix>-<pid>-*`` folders (default: in the temp folder) whose process is gone."""
    base = folder if folder is not None else Path(tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = list(base.iterdir())
    except OSError:
        return removed
    for path in entries:
        match = _WITH_PID.match(path.name)
        if match is None or match.group("prefix") != prefix or pid_alive(int(match.group("pid"))):
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed
