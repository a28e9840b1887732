"""Runs in the sandbox's child process (``python -I -B harness.py program.py``): installs an
audit hook, then executes the program.

The hook refuses, with PermissionError, what a test of a pure function never needs: opening
a file for writing outside the working directory (a fresh temporary directory), removing or
renaming files outside it, sockets, starting processes (``subprocess``, ``os.system``,
``os.exec*``, ``fork``), loading native code through ``ctypes``, and changing the hook
itself. It is a second line behind the process limits and the network namespace, not a
security boundary of its own: see docs/benchmarks.md. This file imports only the standard
library and is never imported by CoEval itself.
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.realpath(os.getcwd())
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_BLOCKED = (
    "socket.", "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
    "os.forkpty", "pty.spawn", "ctypes.", "sys.addaudithook", "os.kill", "os.killpg", "signal.pthread_kill",
    "os.chdir", "os.chroot", "os.setuid", "os.truncate", "shutil.chown", "os.chown", "os.chmod", "os.link",
    "os.symlink", "os.startfile", "webbrowser.open", "urllib.Request", "http.client.connect",
)
_PATH_EVENTS = ("os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.utime", "shutil.rmtree", "shutil.move",
                "shutil.copyfile")


def _inside(path: object) -> bool:
    try:
        real = os.path.realpath(ROOT if isinstance(path, int) else os.fsdecode(path))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return real == ROOT or real.startswith(ROOT + os.sep)


def _writes(mode: object, flags: object) -> bool:
    if isinstance(mode, str) and any(c in mode for c in "wax+"):
        return True
    return isinstance(flags, int) and bool(flags & _WRITE_FLAGS)


def _hook(event: str, args: tuple[object, ...]) -> None:
    if event == "open":
        path, mode, flags = [*args, None, None, None][:3]
        if _writes(mode, flags) and not _inside(path):
            raise PermissionError(f"sandbox: writing outside the working directory is not allowed ({path!r})")
        return
    if event.startswith(_BLOCKED):
        raise PermissionError(f"sandbox: {event} is not allowed")
    if event in _PATH_EVENTS and args and not all(_inside(a) for a in args[:2] if isinstance(a, str | bytes)):
        raise PermissionError(f"sandbox: {event} outside the working directory is not allowed")


def main() -> None:
    program = sys.argv[1]
    with open(program, encoding="utf-8") as fh:
        source = fh.read()
    code = compile(source, program, "exec")
    sys.addaudithook(_hook)
    exec(code, {"__name__": "__main__", "__file__": program})


if __name__ == "__main__":
    main()
