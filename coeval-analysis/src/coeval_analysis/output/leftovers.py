"""What a killed ``analyze`` or viewer build leaves, removed by the next one: the viewer's
``<db>.<pid>.part`` files (and their ``.wal``) and the staging folders of analysis output,
each named with the pid of the process that made it."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

from coeval.storage.leftovers import pid_alive

__all__ = ["remove_dead_parts", "remove_dead_staging"]


def _pid(text: str) -> int | None:
    return int(text) if text.isdigit() else None


def remove_dead_parts(db: Path) -> list[Path]:
    """Remove ``<db stem>.<pid>.part*`` beside ``db`` whose process is gone."""
    removed: list[Path] = []
    prefix = db.stem + "."
    with contextlib.suppress(OSError):
        for path in db.parent.iterdir():
            if not path.name.startswith(prefix) or ".part" not in path.name:
                continue
            pid = _pid(path.name[len(prefix):].split(".", 1)[0])
            if pid is not None and not pid_alive(pid) and path.is_file():
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                    removed.append(path)
    return removed


def remove_dead_staging(out: Path) -> list[Path]:
    """Remove ``.<out name>.<pid>.new`` / ``.old`` folders beside ``out`` whose process is gone."""
    removed: list[Path] = []
    prefix = f".{out.name}."
    with contextlib.suppress(OSError):
        for path in out.parent.iterdir():
            name = path.name
            if not name.startswith(prefix) or not name.endswith((".new", ".old")):
                continue
            pid = _pid(name[len(prefix):].rsplit(".", 1)[0])
            if pid is not None and not pid_alive(pid) and path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
    return removed
