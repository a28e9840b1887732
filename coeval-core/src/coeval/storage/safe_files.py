"""How CoEval opens the files it writes in a run folder: never through a symbolic link,
always with one file mode.

A run folder may come from someone else (shared, unpacked from an archive) and hold a
link where a record file, ``run.log`` or a phase folder should be; writing through it would
truncate or append to whatever the link points at. Files are opened with ``O_NOFOLLOW``
and their folder is checked, so a link is a clear error naming it
(:class:`SymlinkInRunFolder`, an ``OSError``: the run stops with exit code 2).

File modes: records hold prompts and answers, which may be private, so every file CoEval
writes in a run folder (and in the viewer's cache) is readable by its owner only
(:data:`FILE_MODE`, 0600). docs/security.md says so.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path
from typing import Any

from filelock import FileLock

__all__ = ["FILE_MODE", "SymlinkInRunFolder", "apply_file_mode", "folder_lock", "open_no_follow", "refuse_links"]

#: every file written in a run folder or the viewer's cache: owner read/write only
FILE_MODE = 0o600
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class SymlinkInRunFolder(OSError):
    """A file or folder CoEval would write is a symbolic link."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(errno.ELOOP, "is a symbolic link; CoEval does not write or copy through links in a run "
                         "folder (replace the link by a real file or folder, or remove it)", str(path))


def refuse_links(*paths: Path) -> None:
    """Raise :class:`SymlinkInRunFolder` for the first of ``paths`` that is a link."""
    for path in paths:
        if path.is_symlink():
            raise SymlinkInRunFolder(path)


def open_no_follow(path: Path, flags: int, mode: int = FILE_MODE) -> int:
    """``os.open`` that refuses a link as the file or as its folder; a file it creates gets
    ``mode``, one that exists is brought to :data:`FILE_MODE` where the owner may."""
    refuse_links(path.parent)
    try:
        fd = os.open(path, flags | _NOFOLLOW | _CLOEXEC, mode)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK) and path.is_symlink():
            raise SymlinkInRunFolder(path) from None
        raise
    if flags & (os.O_WRONLY | os.O_RDWR):
        _fchmod(fd, mode)
    return fd


def _fchmod(fd: int, mode: int) -> None:
    with contextlib.suppress(OSError, AttributeError):  # not the owner, or no fchmod: keep the mode
        os.fchmod(fd, mode)


def apply_file_mode(path: Path) -> None:
    """Bring a file written by other means (a library's own writer) to :data:`FILE_MODE`."""
    with contextlib.suppress(OSError):
        if not path.is_symlink():
            path.chmod(FILE_MODE)


def folder_lock(path: Path, **kwargs: Any) -> FileLock:
    """A :class:`filelock.FileLock` whose lock file gets :data:`FILE_MODE` too."""
    return FileLock(str(path), mode=FILE_MODE, **kwargs)
