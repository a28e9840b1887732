"""How CoEval opens the files of a run folder: it writes never through a symbolic link,
always with one file mode, and reads regular files inside the run folder only.

A run folder may come from someone else (shared, unpacked from an archive) and hold a
link where a record file, ``run.log`` or a phase folder should be; writing through it would
truncate or append to whatever the link points at. Files are opened with ``O_NOFOLLOW``
and their folder is checked, so a link is a clear error naming it
(:class:`SymlinkInRunFolder`, an ``OSError``: the run stops with exit code 2).

Reading: a shared run folder may hold a FIFO (which would hang a reader), a link to
``/dev/zero`` (which would fill memory) or a link to a file elsewhere on the machine. Every
reader lists and opens run files through :func:`check_run_file` and :func:`open_regular`:
anything that is not a regular file, and any link whose target leaves the run folder, is
:class:`UnsafeRunFile` (an ``OSError`` whose text names the file and the rule; the
commands end with it on one line and exit code 2).

File modes: records hold prompts and answers, which may be private, so every file CoEval
writes in a run folder (and in the viewer's cache) is readable by its owner only
(:data:`FILE_MODE`, 0600). docs/security.md says so.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path
from typing import IO, Any

from filelock import FileLock

__all__ = [
    "FILE_MODE",
    "SymlinkInRunFolder",
    "UnsafeRunFile",
    "apply_file_mode",
    "check_run_file",
    "folder_lock",
    "open_no_follow",
    "open_regular",
    "read_run_file",
    "refuse_links",
    "run_files",
]

#: every file written in a run folder or the viewer's cache: owner read/write only
FILE_MODE = 0o600
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class SymlinkInRunFolder(OSError):
    """A file or folder CoEval would write is a symbolic link."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(errno.ELOOP, "is a symbolic link; CoEval does not write or copy through links in a run "
                         "folder (replace the link by a real file or folder, or remove it)", str(path))


class UnsafeRunFile(OSError):
    """A run file CoEval will not read: not a regular file, or a link leaving the run folder."""

    def __init__(self, path: Path | str, rule: str) -> None:
        super().__init__(errno.EINVAL, rule, str(path))

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
_REGULAR_ONLY = "CoEval reads only regular files in a run folder (replace it by a regular file, or remove it)"
_INSIDE_ONLY = "CoEval reads only files inside a run folder (copy the file in, or remove the link)"


def _not_regular(path: Path | str, mode: int) -> UnsafeRunFile:
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return UnsafeRunFile(path, f"is {kind}, not a regular file; {_REGULAR_ONLY}")


def check_run_file(path: Path, root: Path) -> None:
    """Raise :class:`UnsafeRunFile` unless ``path`` is a regular file (a missing one passes:
    readers handle that) and, when it or a folder on its way is a link, its target lies
    inside the run folder ``root``."""
    _check_folder(path.parent, Path(root).resolve())
    _check_entry(path, Path(root).resolve())


def _check_folder(folder: Path, inside: Path) -> None:
    """A folder (or a link to one) whose real place is outside ``inside`` is refused."""
    try:
        real = folder.resolve(strict=True)
    except (OSError, RuntimeError):
        return  # a missing folder holds nothing to read
    if not real.is_relative_to(inside):
        raise UnsafeRunFile(folder, f"is a symbolic link to {real}, outside the run folder; {_INSIDE_ONLY}")


def _check_entry(path: Path, inside: Path) -> None:
    """One file of a folder already checked: a regular file, or a link to one inside."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UnsafeRunFile(path, f"cannot be read ({exc.strerror})") from None
    if stat.S_ISLNK(st.st_mode):
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):  # a dangling link, or a loop of links
            raise UnsafeRunFile(path, "is a symbolic link that leads nowhere; " + _REGULAR_ONLY) from None
        if not target.is_relative_to(inside):
            raise UnsafeRunFile(path, f"is a symbolic link to {target}, outside the run folder; {_INSIDE_ONLY}")
        st = os.stat(target)
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(path, st.st_mode)


def open_regular(path: Path) -> IO[bytes]:
    """``path`` opened for binary reading, when it is a regular file; else
    :class:`UnsafeRunFile` (a FIFO is opened without waiting for a writer, then refused).
    A missing file raises ``FileNotFoundError`` as ``open`` does."""
    fd = os.open(path, os.O_RDONLY | _NONBLOCK | _CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(path, mode)
        if _NONBLOCK:
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_run_file(path: Path, root: Path) -> bytes:
    """The bytes of the run file ``path`` (checked with :func:`check_run_file` against the
    run folder ``root``); ``FileNotFoundError`` when there is none."""
    check_run_file(path, root)
    with open_regular(path) as fh:
        return fh.read()


def run_files(folder: Path, pattern: str, root: Path) -> list[Path]:
    """The files of ``folder`` matching ``pattern``, sorted, each checked with
    :func:`check_run_file` against the run folder ``root`` (none when there is no folder)."""
    if not folder.is_dir():
        return []
    inside = Path(root).resolve()
    _check_folder(folder, inside)  # once: a linked phase folder is one refusal, its files need no resolving
    found = sorted(folder.glob(pattern))
    for path in found:
        _check_entry(path, inside)
    return found


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
