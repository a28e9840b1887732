"""The first process inside the sandbox: ``python -I -B -c <this file> LIMITS NONCE_FD REPORT_FD``.

It reads the program from stdin (then stdin is ``/dev/null``), sets the limits, tells the
parent it started (``S`` on REPORT_FD), and runs the program as a module named
``solution`` (not ``__main__``: a demo under ``if __name__ == "__main__":`` does not run,
as in HumanEval's own harness). Only when the program, its tests and ``check(entry_point)``
ran to the end does it read the parent's nonce from NONCE_FD and write it back on
REPORT_FD: the one sign of a pass. An exit of any kind before that (``sys.exit``,
``exit()``, ``raise SystemExit``, ``os._exit``) leaves the nonce unsent, so it fails. Its
own time limit (``timeout_s``, a ``SIGALRM``) ends the program with exit code 124; the
parent's wall clock is the limit the program cannot switch off.

Standard library only, and as little of it as will do (start-up time is most of a short
program's time: ``traceback`` is imported only when there is one to print). CoEval never
imports this file, it sends its text.
"""

from __future__ import annotations

import os
import resource
import signal
import sys

PROGRAM_NAME = "solution.py"
TIMEOUT_EXIT = 124
FAILED_EXIT = 1
_MB = 1024 * 1024
#: the program's text, for the traceback's source lines
_SOURCE: list[str] = []


class _OutOfTime(BaseException):
    """Raised by the timer; a BaseException, so ``except Exception`` in the program lets it pass."""


def _limit(kind: int, soft: int, hard: int | None = None) -> None:
    resource.setrlimit(kind, (soft, soft if hard is None else hard))


def _parse(text: str) -> dict[str, float]:
    """``timeout_s=3.0,cpu_seconds=10,...`` (no ``json``: one import less at every start)."""
    return {key: float(value) for key, _, value in (item.partition("=") for item in text.split(","))}


def _set_limits(limits: dict[str, float]) -> None:
    cpu = int(limits["cpu_seconds"])
    _limit(resource.RLIMIT_CPU, cpu, cpu + 1)  # SIGXCPU at the soft limit, SIGKILL a second later
    _limit(resource.RLIMIT_AS, int(limits["memory_mb"]) * _MB)
    _limit(resource.RLIMIT_FSIZE, int(limits["file_size_mb"]) * _MB)
    _limit(resource.RLIMIT_NOFILE, int(limits["open_files"]))
    _limit(resource.RLIMIT_NPROC, int(limits["processes"]))
    _limit(resource.RLIMIT_CORE, 0)


def _say(text: str) -> None:
    """To the real stderr, whatever the program did to ``sys.stderr``."""
    try:
        os.write(2, text.encode("utf-8", "replace"))
    except OSError:
        return


def _flush() -> None:
    """What the program left in Python's buffers, before ``os._exit`` drops it."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()  # type: ignore[union-attr]
        except Exception:  # the program may have replaced or closed it
            continue


def _fail(exc: BaseException) -> None:
    _flush()
    if isinstance(exc, _OutOfTime):
        _say(f"timed out: the program and its tests took longer than {exc.args[0]:g} s\n")
        os._exit(TIMEOUT_EXIT)
    if isinstance(exc, SystemExit):
        _say(f"the program exited (SystemExit: {exc.code!r}) before its tests finished\n")
        os._exit(FAILED_EXIT)
    import linecache
    import traceback

    linecache.cache[PROGRAM_NAME] = (len(_SOURCE[0]), None, _SOURCE[0].splitlines(True), PROGRAM_NAME)
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != PROGRAM_NAME:
        tb = tb.tb_next  # leave out the harness's own frames
    _say("".join(traceback.format_exception(type(exc), exc, tb)))
    os._exit(FAILED_EXIT)


def main() -> None:
    limits, nonce_fd, report_fd = _parse(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    source = sys.stdin.buffer.read().decode("utf-8", "replace")
    _SOURCE.append(source)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    _set_limits(limits)
    os.write(report_fd, b"S")
    module = type(sys)("solution")
    module.__file__ = PROGRAM_NAME
    sys.modules["solution"] = module
    timeout = float(limits["timeout_s"])

    out_of_time_error = _OutOfTime

    def out_of_time(_signum: int, _frame: object) -> None:
        raise out_of_time_error(timeout)

    signal.signal(signal.SIGALRM, out_of_time)
    # what the end needs, held here: the program may empty this module's globals
    setitimer, real_timer, read, write, leave, fail = signal.setitimer, signal.ITIMER_REAL, os.read, os.write, os._exit, _fail
    try:
        code = compile(source, PROGRAM_NAME, "exec")
        setitimer(real_timer, timeout)
        exec(code, module.__dict__)
        setitimer(real_timer, 0)
    except BaseException as exc:
        setitimer(real_timer, 0)
        try:
            fail(exc)
        finally:
            leave(FAILED_EXIT)
    write(report_fd, b"D" + read(nonce_fd, 64))
    leave(0)


if __name__ == "__main__":
    main()
