"""Analysis output written whole or not at all: the reports go to a staging folder beside
the output folder, which then takes its place in two renames. A kill while reports are
written leaves the previous output as it was (never a mix of old and new files); the next
``analyze`` removes the staging folder of a killed one. Files in the output folder that
this analysis does not write (another report's, a user's) are carried over as hard links.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from coeval_analysis.output.leftovers import remove_dead_staging

__all__ = ["staged_output"]


def _link_or_copy(src: str, dest: str) -> None:
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)


def _carry(entry: Path, target: Path) -> None:
    if entry.is_symlink():
        os.symlink(os.readlink(entry), target)
    elif entry.is_dir():
        shutil.copytree(entry, target, symlinks=True, copy_function=_link_or_copy)
    else:
        _link_or_copy(str(entry), str(target))


def _swappable(out: Path) -> bool:
    """Not the working folder or one above it (those are never renamed away)."""
    try:
        resolved, cwd = out.resolve(), Path.cwd().resolve()
    except OSError:
        return False
    return resolved != resolved.parent and resolved != cwd and resolved not in cwd.parents


@contextlib.contextmanager
def staged_output(out: Path) -> Iterator[Path]:
    """Yield the folder to write the reports in; on success it becomes ``out``."""
    remove_dead_staging(out)
    if not _swappable(out) or (out.exists() and not out.is_dir()):
        yield out
        return
    staging = out.parent / f".{out.name}.{os.getpid()}.new"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        yield staging
        if out.is_dir():
            for entry in out.iterdir():
                target = staging / entry.name
                if not (target.exists() or target.is_symlink()):
                    _carry(entry, target)
            old = out.parent / f".{out.name}.{os.getpid()}.old"
            shutil.rmtree(old, ignore_errors=True)
            os.rename(out, old)
            os.rename(staging, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
