"""The bubblewrap command line a program runs under, and whether bubblewrap works here.

Inside: new user (uid and gid 65534, no capabilities, no further user namespaces), PID,
network, IPC, UTS and (where the kernel allows) cgroup namespaces, its own session, killed
when its parent dies. The file system is a fresh root holding only what the interpreter
needs, read-only (``/usr``, the ``/bin``-style links to it, the Python installation when it
lives elsewhere), a new ``/proc`` and ``/dev``, and a size-limited tmpfs at ``/tmp`` that is
the working directory and ``HOME``. Nothing else of the machine is there: not the user's
home, not the run folder, not ``~/.coeval``. The environment is emptied.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = [
    "SANDBOX_HOME",
    "SandboxUnavailable",
    "as_sandbox_user",
    "bwrap_command",
    "find_bwrap",
    "python_for_sandbox",
    "sandbox_user",
]

SANDBOX_HOME = "/tmp"
NOBODY = 65534
#: What a machine without bubblewrap is told to install.
INSTALL_HINT = ("install the bubblewrap package (apt-get install bubblewrap, dnf install bubblewrap, "
                "pacman -S bubblewrap)")


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing, or cannot make its namespaces on this machine."""


def sandbox_user() -> int | None:
    """The user bubblewrap runs as: ``nobody`` when CoEval runs as root, else CoEval's own."""
    return NOBODY if os.geteuid() == 0 else None


def _reachable_by_others(path: Path) -> bool:
    """Whether any user can run ``path`` (every folder above it searchable, the file readable)."""
    try:
        if path.stat().st_mode & 0o005 != 0o005:
            return False
        return all(parent.stat().st_mode & 0o001 for parent in path.parents)
    except OSError:
        return False


@functools.cache
def python_for_sandbox() -> Path:
    """The interpreter the program runs on: the base installation of the running one (the
    virtual environment's packages are not the program's to see); when bubblewrap runs as
    ``nobody`` and cannot reach it (a Python under ``/root``), the system's Python of the
    same version, else the system's ``python3``."""
    own = Path(getattr(sys, "_base_executable", None) or sys.executable).resolve()
    if sandbox_user() is None or _reachable_by_others(own):
        return own
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for name in (version, "python3"):
        found = shutil.which(name, path="/usr/bin:/bin:/usr/local/bin")
        if found and _reachable_by_others(Path(found).resolve()):
            return Path(found).resolve()
    return own


def _system_dirs() -> list[str]:
    """``/usr`` read-only, and the top-level links into it (``/bin -> usr/bin``) as links."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        top = Path("/") / name
        if top.is_symlink():
            args += ["--symlink", os.readlink(top), str(top)]
        elif top.is_dir():
            args += ["--ro-bind", str(top), str(top)]
    return args


def _python_dirs(python: Path) -> list[str]:
    """The Python installation, when it is not under ``/usr`` (pyenv, conda, /opt)."""
    roots = {python.parent.parent}
    if python == Path(getattr(sys, "_base_executable", None) or sys.executable).resolve():
        roots |= {Path(sys.base_prefix).resolve(), Path(sys.base_exec_prefix).resolve()}
    out: list[str] = []
    for root in sorted(roots):
        if root.is_dir() and not root.is_relative_to("/usr") and root != Path("/"):
            out += ["--ro-bind", str(root), str(root)]
    return out


def bwrap_command(bwrap: str, python: Path, tmpfs_mb: int) -> list[str]:
    """The bwrap arguments before the interpreter's own."""
    return [
        bwrap,
        "--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY), "--disable-userns",
        "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        "--hostname", "sandbox", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
        *_system_dirs(), *_python_dirs(python),
        "--proc", "/proc", "--dev", "/dev",
        "--perms", "0700", "--size", str(tmpfs_mb * 1024 * 1024), "--tmpfs", SANDBOX_HOME,
        "--chdir", SANDBOX_HOME,
        "--clearenv", "--setenv", "HOME", SANDBOX_HOME, "--setenv", "TMPDIR", SANDBOX_HOME,
        "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "LANG", "C.UTF-8",
        "--",
    ]


def as_sandbox_user(argv: list[str]) -> tuple[list[str], dict[str, Any]]:
    """``argv`` and ``subprocess`` arguments that start bubblewrap as :func:`sandbox_user`:
    through util-linux's ``setpriv`` where there is one (``subprocess`` can then start it
    with ``vfork``, tens of milliseconds less from a large process), else ``user=``."""
    user = sandbox_user()
    if user is None:
        return argv, {}
    setpriv = shutil.which("setpriv")
    if setpriv:
        return [setpriv, f"--reuid={user}", f"--regid={user}", "--clear-groups", *argv], {}
    return argv, {"user": user, "group": user, "extra_groups": []}


def find_bwrap() -> str:
    """The path of a bubblewrap that works here; SandboxUnavailable says why there is none."""
    found = shutil.which("bwrap")
    if found is None:
        raise SandboxUnavailable(f"bubblewrap (bwrap) is not installed, so student code cannot run in a sandbox; "
                                 f"{INSTALL_HINT}")
    problem = _probe(found)
    if problem:
        raise SandboxUnavailable(f"bubblewrap ({found}) cannot make its namespaces on this machine: {problem}")
    return found


@functools.cache
def _probe(bwrap: str) -> str:
    """Empty when bwrap runs the interpreter in the sandbox; else what it printed. Tried once."""
    python = python_for_sandbox()
    try:
        argv, as_user = as_sandbox_user([*bwrap_command(bwrap, python, 1), str(python), "-I", "-S", "-c", "pass"])
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=30, check=False,
                              env={"PATH": "/usr/bin:/bin"}, **as_user)
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    if done.returncode == 0:
        return ""
    return done.stderr.decode("utf-8", "replace").strip()[-500:] or f"exit code {done.returncode}"
