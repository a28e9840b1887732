"""``resume_from``: start a new run from the artifacts of an earlier one.

The new run gets a copy of every phase folder of the source run whose phase is *not* in
mode New: with the seed's resume examples (phases 1-3 Keep, 4-5 Extend or Model) that is
everything, so the new run answers and judges exactly what is missing, or only what a new
model adds. A phase in mode New starts empty. The source is never modified; provenance is
recorded in ``meta.json`` under ``forked_from``. A symbolic link among the copied files
stops the fork with an error naming it: what it points to is never copied.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from coeval.storage.run_folder import PHASE_DIRS, RunFolder, utc_now
from coeval.storage.safe_files import FILE_MODE, folder_lock, refuse_links

__all__ = ["fork_run"]


def _copy_file(src: Path, dest: Path) -> None:
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    shutil.copy2(src, tmp, follow_symlinks=False)
    os.chmod(tmp, FILE_MODE)
    os.replace(tmp, dest)


def fork_run(source: RunFolder, dest: RunFolder, phases: Iterable[str]) -> dict[str, object]:
    """Copy the given phases' artifacts from ``source`` into ``dest`` (files ``dest``
    already has are kept) and return the provenance record for ``meta.json``."""
    dest.root.mkdir(parents=True, exist_ok=True)
    copied: list[str] = []
    files = 0
    with folder_lock(dest.root / ".fork.lock"):
        for phase in phases:
            src_dir = source.root / PHASE_DIRS[phase]
            if not src_dir.is_dir():
                continue
            dest_dir = dest.root / PHASE_DIRS[phase]
            dest_dir.mkdir(parents=True, exist_ok=True)
            refuse_links(src_dir, dest_dir)
            for src in sorted(src_dir.iterdir()):
                if src.name.startswith("."):
                    continue
                refuse_links(src)  # a link's target may be anything on the machine: never copied
                if src.is_file():
                    target = dest_dir / src.name
                    if not target.exists():
                        _copy_file(src, target)
                        files += 1
            copied.append(phase)
    source_meta = source.read_meta()
    return {
        "path": str(source.root.resolve()),
        "experiment_id": source_meta.get("experiment_id", source.root.name),
        "phases_copied": copied,
        "files_copied": files,
        "source_phases_completed": list(source_meta.get("phases_completed", [])),
        "forked_at": utc_now(),
    }
