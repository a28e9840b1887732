"""No network for the child: a new network namespace (with a user namespace when not root).

A process in a fresh network namespace has only a loopback device, and it is down: every
connect, to the internet or to a server on the machine's own 127.0.0.1, fails. Linux only;
containers often forbid ``unshare``. :func:`network_isolation` says whether it works here,
by trying it once in a throwaway child.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import subprocess
import sys
from collections.abc import Callable

__all__ = ["enter_network_namespace", "network_isolation"]

_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000


def _unshare(flags: int) -> bool:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        return int(libc.unshare(flags)) == 0
    except (OSError, AttributeError):
        return False


def enter_network_namespace() -> None:
    """In the child, before exec: leave the machine's network (raises OSError when the
    kernel or the container does not allow it)."""
    if not (_unshare(_CLONE_NEWUSER | _CLONE_NEWNET) or _unshare(_CLONE_NEWNET)):
        raise OSError("unshare(CLONE_NEWNET) is not permitted here")


@functools.cache
def network_isolation() -> bool:
    """Whether a child can be started in its own network namespace on this machine."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        done = subprocess.run([sys.executable, "-I", "-c", "pass"], preexec_fn=enter_network_namespace,
                              capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


#: what run.py hands to subprocess as preexec steps
PreExec = Callable[[], None]
