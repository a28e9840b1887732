"""Run a program (a student's code followed by a benchmark's tests) in a limited child process.

What the child gets (docs/benchmarks.md, "The code sandbox", says what this does and does
not protect against):

* a fresh temporary directory as its working directory and ``HOME``, deleted afterwards;
* ``python -I -B``: no user site-packages, no ``PYTHON*`` variables, no bytecode written;
  an environment with nothing but ``PATH``, ``HOME``, ``TMPDIR`` and ``LANG``;
* limits (``resource.setrlimit``): CPU seconds, address space (memory), the size of any
  file it writes, open files, the number of processes (no forks), no core dumps;
* a wall-clock timeout, after which its whole process group is killed;
* its own session (a signal to the run's terminal never reaches it, and it cannot reach the
  terminal);
* no network: a new network namespace (:mod:`coeval.sandbox.namespace`); where the machine
  does not allow one, :func:`run_python` refuses (:class:`SandboxRefused`) unless
  ``allow_unsandboxed`` is set;
* an audit hook (:mod:`coeval.sandbox.harness`) refusing writes outside its directory,
  sockets, new processes and ``ctypes``.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import attrs

from coeval.sandbox.namespace import enter_network_namespace, network_isolation

__all__ = ["ExecutionLimits", "ExecutionResult", "SandboxRefused", "run_python"]

HARNESS = Path(__file__).with_name("harness.py")
#: The captured error kept in a record: the end of stderr, where Python puts the exception.
ERROR_TAIL = 2000


class SandboxRefused(RuntimeError):
    """Code would run with network access, and that was not allowed."""


@attrs.frozen
class ExecutionLimits:
    """Per run of one program. Defaults suit a HumanEval-sized function and its tests."""

    cpu_seconds: int = 10
    wall_seconds: float = 20.0
    memory_mb: int = 1024
    file_size_mb: int = 16
    open_files: int = 64
    processes: int = 1


@attrs.frozen
class ExecutionResult:
    """``status``: passed (exit code 0), failed (an exception, a failed assert), timeout
    (wall clock or CPU time), error (the sandbox could not start it)."""

    status: str
    error: str = ""
    duration_s: float = 0.0
    network_isolated: bool = True

    @property
    def passed(self) -> bool:
        return self.status == "passed"


def _limit(kind: int, value: int, hard: int | None = None) -> None:
    soft_hard = (value, value if hard is None else hard)
    try:
        resource.setrlimit(kind, soft_hard)
    except (ValueError, OSError):  # cannot raise a hard limit that is lower already: lower it only
        _soft, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY and hard < value:
            resource.setrlimit(kind, (hard, hard))
        else:
            raise


def _pre_exec(limits: ExecutionLimits, isolate: bool) -> None:
    """In the child between fork and exec: network first (it may need a process), then limits."""
    if isolate:
        enter_network_namespace()
    mb = 1024 * 1024
    _limit(resource.RLIMIT_CPU, limits.cpu_seconds, limits.cpu_seconds + 1)  # SIGXCPU, then SIGKILL
    _limit(resource.RLIMIT_AS, limits.memory_mb * mb)
    _limit(resource.RLIMIT_FSIZE, limits.file_size_mb * mb)
    _limit(resource.RLIMIT_NOFILE, limits.open_files)
    _limit(resource.RLIMIT_CORE, 0)
    _limit(resource.RLIMIT_NPROC, limits.processes)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _tail(raw: bytes) -> str:
    """The end of stderr, without the harness's own frames (they are the same every time)."""
    lines = raw.decode("utf-8", errors="replace").strip().splitlines()
    kept: list[str] = []
    skip_next = False
    for line in lines:
        if skip_next:
            skip_next = False
            continue
        if line.strip().startswith("File ") and HARNESS.name in line and "program.py" not in line:
            skip_next = True  # the frame's source line follows
            continue
        kept.append(line)
    return "\n".join(kept)[-ERROR_TAIL:]


def run_python(program: str, limits: ExecutionLimits | None = None, *, allow_unsandboxed: bool = False) -> ExecutionResult:
    """Run ``program`` (Python source) in the sandbox; never raises for what the program does.

    Raises :class:`SandboxRefused` when no network namespace can be made here and
    ``allow_unsandboxed`` is False.
    """
    limits = limits or ExecutionLimits()
    isolate = network_isolation()
    if not isolate and not allow_unsandboxed:
        raise SandboxRefused(
            "this machine does not allow a network namespace (unshare), so student code would run with "
            "network access; pass --allow-unsandboxed-code to run it anyway (see docs/benchmarks.md)"
        )
    with tempfile.TemporaryDirectory(prefix="coeval-sandbox-") as folder:
        path = Path(folder) / "program.py"
        path.write_text(program, encoding="utf-8")
        env = {"PATH": "/usr/bin:/bin", "HOME": folder, "TMPDIR": folder, "LANG": "C.UTF-8"}
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-B", str(HARNESS), str(path)],
                cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                start_new_session=True, preexec_fn=lambda: _pre_exec(limits, isolate),
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return ExecutionResult("error", f"the sandbox could not start: {exc}", 0.0, isolate)
        try:
            _out, err = proc.communicate(timeout=limits.wall_seconds)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.communicate()
            return ExecutionResult("timeout", f"killed after {limits.wall_seconds:g} s of wall-clock time",
                                   round(time.monotonic() - started, 3), isolate)
        finally:
            _kill_group(proc)  # anything it left behind in its session
        duration = round(time.monotonic() - started, 3)
    code = proc.returncode
    if code == 0:
        return ExecutionResult("passed", "", duration, isolate)
    if code == -signal.SIGXCPU:
        return ExecutionResult("timeout", f"stopped at the CPU time limit ({limits.cpu_seconds} s)", duration, isolate)
    if code == -signal.SIGKILL:
        return ExecutionResult("failed", f"killed by the kernel (CPU time limit of {limits.cpu_seconds} s, or out of "
                               "memory)", duration, isolate)
    return ExecutionResult("failed", _tail(err) or f"exit code {code}", duration, isolate)
