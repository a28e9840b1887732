"""The run-folder lock: one normal run at a time, or any number of ``--only-models`` shards.

A normal ``coeval run`` (and ``coeval repair``) holds the lock *exclusively*; shards hold it
*shared*, so several shards may work in one folder together but never beside a normal run.
On POSIX this is ``flock(2)`` on ``.run.lock``: the kernel drops the lock when the process
dies, even by SIGKILL, so a crash never leaves a stale lock behind. Where ``fcntl`` is not
available, both kinds fall back to an exclusive :class:`filelock.FileLock` (shards then run
one at a time).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO

from coeval.storage.safe_files import open_no_follow

__all__ = ["RunFolderBusyError", "RunLock", "folder_in_use"]

LOCK_NAME = ".run.lock"


class RunFolderBusyError(RuntimeError):
    """Another process holds the run folder."""


class RunLock:
    """``with RunLock(folder, shared=False):`` ... Fails at once (never waits) when busy."""

    def __init__(self, root: str | os.PathLike[str], *, shared: bool = False) -> None:
        self.root = Path(root)
        self.shared = shared
        self.path = self.root / LOCK_NAME
        self._fh: IO[str] | None = None
        self._fallback: object | None = None

    def acquire(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            self._acquire_fallback()
            return
        fh = os.fdopen(open_no_follow(self.path, os.O_RDWR | os.O_CREAT), "r+", encoding="utf-8")
        flags = (fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX) | fcntl.LOCK_NB
        try:
            fcntl.flock(fh.fileno(), flags)
        except OSError:
            holder = _read_holder(self.path)
            fh.close()
            raise RunFolderBusyError(self._busy_message(holder)) from None
        if not self.shared:
            fh.seek(0)
            fh.truncate()
            fh.write(f"pid {os.getpid()}\n")
            fh.flush()
        self._fh = fh

    def _acquire_fallback(self) -> None:  # pragma: no cover - Windows
        from filelock import FileLock, Timeout

        lock = FileLock(str(self.path) + ".fl", mode=0o600)
        try:
            lock.acquire(timeout=0)
        except Timeout:
            raise RunFolderBusyError(self._busy_message(None)) from None
        self._fallback = lock

    def _busy_message(self, holder: str | None) -> str:
        who = f" ({holder})" if holder else ""
        if self.shared:
            return (
                f"{self.root}: a normal `coeval run` or `coeval repair` is using this run folder{who}; "
                "--only-models shards can join only runs that are themselves sharded. Wait for it to finish."
            )
        return (
            f"{self.root}: another coeval process is using this run folder{who}. Wait for it to finish "
            "(or stop it) and try again; to run several processes on one folder, give each --only-models."
        )

    def release(self) -> None:
        if self._fh is not None:
            with contextlib.suppress(OSError):
                import fcntl

                fcntl.flock(self._fh.fileno(), fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None
        if self._fallback is not None:  # pragma: no cover - Windows
            self._fallback.release()  # type: ignore[attr-defined]
            self._fallback = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def folder_in_use(root: str | os.PathLike[str]) -> bool:
    """Whether a coeval process (run, shard, repair) holds the run folder now. Reads only."""
    path = Path(root) / LOCK_NAME
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: cannot tell without taking the lock
        return False
    try:
        fh = path.open("r", encoding="utf-8")
    except OSError:
        return False  # every run creates the lock file: none has run here
    with fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        return False


def _read_holder(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return text or None
